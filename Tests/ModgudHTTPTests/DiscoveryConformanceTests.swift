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
