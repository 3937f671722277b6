import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 44: the rows of docs/security/bcp-checklist.md that were gaps, each as a request an
/// attacker would send: a token of the wrong type, another client's refresh token, a
/// cross-origin script at the authorization endpoint, a page in a frame, a forged
/// `X-Forwarded-For`.
final class HostileRequestTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// ASVS 9.2.2: only an access token opens a bearer endpoint. An ID token and a refresh
    /// token of a live sign-in are `invalid_token` at userinfo, the passkey list and the
    /// account API, and introspect as inactive.
    func testOnlyAnAccessTokenIsAcceptedWhereAnAccessTokenIsExpected() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let signedIn = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            let access = try XCTUnwrap(signedIn.json["access_token"] as? String)
            let others = ["id_token", "refresh_token"].compactMap { signedIn.json[$0] as? String }
            XCTAssertEqual(others.count, 2)
            for (method, path) in [(HTTPRequest.Method.get, "/connect/userinfo"), (.get, "/connect/passkey"), (.post, "/api/account/totp/enroll")] {
                let accepted = try await H.call(client, method, path, "", headers: [.authorization: "Bearer \(access)"])
                XCTAssertNotEqual(accepted.status, .unauthorized, "\(path) takes the access token")
                for token in others {
                    let refused = try await H.call(client, method, path, "", headers: [.authorization: "Bearer \(token)"])
                    XCTAssertEqual(refused.status, .unauthorized, "\(path): \(refused.body)")
                    XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true, path)
                }
            }
            for token in others {
                let introspected = try await harness.core.tokenIntrospection.introspect(realm: "dev", token: token)
                XCTAssertFalse(introspected.active)
            }
        }
    }

    /// RFC 9700 section 4.14.2 and RFC 6749 section 6: a refresh token is its client's. Another
    /// client presenting it gets `invalid_grant`, and the rightful client's session goes on.
    func testAnotherClientsRefreshTokenIsRefusedAndTheSessionGoesOn() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let signedIn = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
            let refresh = try XCTUnwrap(signedIn.json["refresh_token"] as? String)
            let stolen = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "plain"), ("refresh_token", refresh)])
            XCTAssertEqual(stolen.status, .badRequest, stolen.body)
            XCTAssertEqual(stolen.json["error"] as? String, "invalid_grant")
            XCTAssertNil(stolen.json["access_token"])
            let rightful = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", refresh)])
            XCTAssertEqual(rightful.status, .ok, rightful.body)
        }
    }

    /// RFC 9700 section 2.6: the authorization endpoint answers no cross-origin request, and
    /// no endpoint grants CORS to an arbitrary origin (preflight or not).
    func testNoCORSAtTheAuthorizationEndpointOrAnywhere() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let origin: HTTPFields = [.origin: "https://evil.example", HTTPField.Name("Access-Control-Request-Method")!: "POST"]
            for (method, path) in [
                (HTTPRequest.Method.get, "/connect/authorize?client_id=app&response_type=code"), (.post, "/connect/authorize"),
                (.options, "/connect/authorize"), (.options, "/connect/token"), (.post, "/connect/token"), (.get, "/connect/userinfo"),
            ] {
                let reply = try await H.call(client, method, path, "", headers: origin)
                XCTAssertNil(reply.headers[HTTPField.Name("Access-Control-Allow-Origin")!], "\(method) \(path)")
                XCTAssertNil(reply.headers[HTTPField.Name("Access-Control-Allow-Credentials")!], "\(method) \(path)")
                XCTAssertNotEqual(reply.status.code / 100, 5, "\(method) \(path)")
            }
        }
    }

    /// RFC 9700 section 4.16: the pages a person sees, the magic-link page and the console's
    /// sign-in, refuse to be framed both ways (CSP `frame-ancestors 'none'` and
    /// `X-Frame-Options: DENY`).
    func testThePagesCannotBeFramed() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let app = buildApplication(
            core: harness.core, configuration: harness.configuration, console: ConsoleConfiguration(), logger: harness.logs.logger("console"))
        try await app.test(.router) { client in
            for path in ["/magic-login?userId=x&token=y", "/console/sign-in", "/console"] {
                let page = try await H.call(client, .get, path, "", headers: [:])
                XCTAssertNotEqual(page.status.code / 100, 5, path)
                let policy = try XCTUnwrap(page.headers[HTTPField.Name("Content-Security-Policy")!], path)
                XCTAssertTrue(policy.contains("frame-ancestors 'none'"), "\(path): \(policy)")
                XCTAssertEqual(page.headers[HTTPField.Name("X-Frame-Options")!], "DENY", path)
            }
        }
    }

    /// RFC 9700 section 4.13: a forwarded address counts only from a trusted proxy, and only
    /// the hops it added: whatever a client writes into `X-Forwarded-For` itself is ignored.
    func testAForgedForwardedForIsIgnored() {
        let proxies: Set<String> = ["10.0.0.2", "10.0.0.3"]
        // Straight from the client: its header means nothing.
        XCTAssertEqual(SourceAddress.key(peer: "203.0.113.9", forwardedFor: "198.51.100.1", trustedProxies: proxies), "203.0.113.9")
        // Through the proxy, with an address the client prepended: the proxy's hop counts.
        XCTAssertEqual(
            SourceAddress.key(peer: "10.0.0.2", forwardedFor: "198.51.100.1, 203.0.113.9", trustedProxies: proxies), "203.0.113.9")
        // Through two proxies: the nearest untrusted hop, not the first.
        XCTAssertEqual(
            SourceAddress.key(peer: "10.0.0.2", forwardedFor: "198.51.100.1, 203.0.113.9, 10.0.0.3", trustedProxies: proxies), "203.0.113.9")
        // A client posing as a trusted proxy inside the header does not move the key past it.
        XCTAssertEqual(
            SourceAddress.key(peer: "10.0.0.2", forwardedFor: "198.51.100.1, 10.0.0.3, 203.0.113.9", trustedProxies: proxies), "203.0.113.9")
        // IPv6 clients count by their /64, wherever the address is written.
        XCTAssertEqual(
            SourceAddress.key(peer: "10.0.0.2", forwardedFor: "2001:db8:1:2:aaaa::1", trustedProxies: proxies), "2001:db8:1:2::/64")
        XCTAssertEqual(SourceAddress.key(peer: "2001:db8:1:2:bbbb::9", forwardedFor: nil, trustedProxies: proxies), "2001:db8:1:2::/64")
    }

    /// RFC 9700 section 2.3 at the Shared Signals API: a receiver's token asked for another API
    /// (`resource`) is refused; its token for itself manages its stream.
    func testAReceiversTokenForAnotherAPICannotManageItsStream() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let (_, secret) = try await harness.core.administration.clients.create(
            realm: "dev", id: "receiver",
            settings: ClientSettings(
                type: .confidential, grants: [.clientCredentials], allowedScopes: ["ssf.manage"], audiences: ["https://api.acme.test"]),
            metadata: .init())
        try await harness.app.test(.router) { client in
            var headers = H.form
            headers[.authorization] = "Basic " + Data("receiver:\(try XCTUnwrap(secret))".utf8).base64EncodedString()
            for (resource, status) in [("https%3A%2F%2Fapi.acme.test", HTTPResponse.Status.unauthorized), ("receiver", .ok)] {
                let issued = try await H.call(
                    client, .post, "/connect/token", "grant_type=client_credentials&scope=ssf.manage&resource=\(resource)", headers: headers)
                let token = try XCTUnwrap(issued.json["access_token"] as? String, issued.body)
                let stream = try await H.call(client, .get, "/ssf/stream", "", headers: [.authorization: "Bearer \(token)"])
                XCTAssertEqual(stream.status, status, "\(resource): \(stream.body)")
            }
        }
    }

    /// ops/enumeration-bench's finding: in a realm without a signing key, a wrong code for an
    /// address holding a live code failed with 500 (the grant signs before it checks) and one
    /// for any other address with 400. A realm that cannot sign now refuses every sign-in and
    /// refresh that may need a signature alike, before any lookup; one that needs none (no
    /// `openid`, reference tokens) still works.
    func testARealmThatCannotSignRefusesEverySignInAlike() async throws {
        harness = try await EmailSignInHarness(signingKey: false)
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            var answers: [String] = []
            for (email, grant) in [("ada@example.com", "urn:cocoar:otp"), ("nobody@example.com", "urn:cocoar:otp"), ("", "refresh_token")] {
                let reply = try await H.token(
                    client,
                    grant == "refresh_token"
                        ? [("grant_type", grant), ("client_id", "app"), ("refresh_token", "unknown")]
                        : [("grant_type", grant), ("client_id", "app"), ("username", email), ("otp_code", "000000"), ("scope", "openid")])
                answers.append("\(reply.status.code) \(reply.json["error"] as? String ?? reply.body)")
            }
            XCTAssertEqual(Set(answers).count, 1, "\(answers)")
            XCTAssertEqual(answers.first, "500 server_error")
            let unsigned = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), scope: "email offline_access")
            XCTAssertEqual(unsigned.status, .ok, unsigned.body)
        }
    }
}
