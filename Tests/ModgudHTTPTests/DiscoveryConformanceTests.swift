import AsyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 25, item 5: discovery that strict clients accept. The documents are checked by
/// Authlib (`Tests/Support/validate_discovery.py`), not by our own reading of the specs; the
/// authorization endpoint that AppAuth requires answers RFC 6749's error and never redirects.
final class DiscoveryConformanceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testTheOpenIDAndRFC8414DocumentsPassAStrictValidator() async throws {
        harness = try await EmailSignInHarness()
        try await harness.app.test(.router) { client in
            let openid = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let oauth = try await H.call(client, .get, "/.well-known/oauth-authorization-server", "", headers: [:])
            XCTAssertEqual(openid.status, .ok)
            XCTAssertEqual(oauth.status, .ok)
            XCTAssertEqual(openid.json["authorization_endpoint"] as? String, "https://localhost/connect/authorize")
            XCTAssertEqual(oauth.json["issuer"] as? String, openid.json["issuer"] as? String)
            let verdict = try Self.validate(#"{"openid":\#(openid.body),"oauth":\#(oauth.body)}"#)
            XCTAssertEqual(verdict, "valid")
            // The validator is not a rubber stamp: a document without its issuer fails.
            var broken = openid.json
            broken["issuer"] = nil
            let brokenJSON = String(decoding: try JSONSerialization.data(withJSONObject: broken), as: UTF8.self)
            XCTAssertTrue(try Self.validate(#"{"openid":\#(brokenJSON),"oauth":\#(oauth.body)}"#).hasPrefix("invalid"))
        }
    }

    /// RFC 8414 section 2 (issue 69): `response_types_supported` says what is served. With the
    /// native grants on, `code`: the Authorization Challenge Endpoint takes `response_type=code`
    /// (draft-ietf-oauth-first-party-apps section 5.1); with them off no request gets a code,
    /// `none`, and the document still passes the strict validator.
    func testResponseTypesSupportedSaysWhatIsServed() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            for path in ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"] {
                let document = try await H.call(client, .get, path, "", headers: [:])
                XCTAssertEqual(document.json["response_types_supported"] as? [String], ["code"], path)
                XCTAssertEqual(document.json["authorization_challenge_endpoint"] as? String, "https://localhost/connect/authorization-challenge")
                XCTAssertTrue((document.json["grant_types_supported"] as? [String] ?? []).contains("authorization_code"), document.body)
            }
            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
            let off = try await Eventually.value("the realm's native grants off") {
                let reply = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
                return reply.json["authorization_challenge_endpoint"] == nil ? reply : nil
            }
            XCTAssertEqual(off.json["response_types_supported"] as? [String], ["none"], off.body)
            XCTAssertFalse((off.json["grant_types_supported"] as? [String] ?? []).contains("authorization_code"), off.body)
            let oauth = try await H.call(client, .get, "/.well-known/oauth-authorization-server", "", headers: [:])
            XCTAssertEqual(try Self.validate(#"{"openid":\#(off.body),"oauth":\#(oauth.body)}"#), "valid")
        }
    }

    func testTheAuthorizationEndpointAnswersUnsupportedResponseTypeAndNeverRedirects() async throws {
        harness = try await EmailSignInHarness()
        try await harness.app.test(.router) { client in
            for uri in ["/connect/authorize", "/connect/authorize?response_type=code&client_id=app&redirect_uri=https%3A%2F%2Fevil.test%2Fcb&state=x"] {
                let reply = try await H.call(client, .get, uri, "", headers: [:])
                XCTAssertEqual(reply.status, .badRequest, uri)
                XCTAssertNil(reply.headers[.location], "never a redirect")
                XCTAssertEqual(reply.json["error"] as? String, "unsupported_response_type")
                XCTAssertEqual(reply.headers[.cacheControl], "no-store")
            }
        }
    }

    /// Runs the Authlib validator on `documents`; its one line of output.
    static func validate(_ documents: String) throws -> String {
        try PythonScript.run("validate_discovery.py", input: documents)
    }
}
