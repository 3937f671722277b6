import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudClient
import ModgudDomain
@testable import ModgudService
import PQ
import XCTest

/// Issue 29, item 5: `ModgudClient` with a DPoP key against the real server over a real
/// socket. The session is bound, userinfo goes out with the DPoP scheme and a proof, the
/// single-flight refresh carries proofs, a client clock ten minutes fast settles through the
/// server's nonce, and another key can neither use nor refresh the session.
final class ModgudClientDPoPTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("modgud-client-dpop-\(UUID().uuidString)")
    }

    override func tearDown() async throws {
        await harness?.close()
        try? FileManager.default.removeItem(at: directory)
    }

    static func client(_ port: Int, harness: EmailSignInHarness, store: any TokenStore, key: (any DPoPSigner)?, skew: TimeInterval = 0) -> ModgudClient {
        let clock = harness.clock
        return ModgudClient(
            configuration: .init(issuer: URL(string: "http://localhost:\(port)")!, clientID: "app", scope: "openid email offline_access"),
            store: store, dpop: key, now: { clock.now().addingTimeInterval(skew) })
    }

    func testABoundSessionThroughUseRefreshAndAStrangersKey() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let store = FileTokenStore(url: directory.appendingPathComponent("session.json"))
        let key = SoftwareDPoPKey()
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            // The app's clock is ten minutes fast: its first proof is answered use_dpop_nonce,
            // and the client retries with the nonce on its own.
            let app = Self.client(port, harness: harness, store: store, key: key, skew: 600)
            try await app.requestCode(email: "ada@example.com")
            let session = try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            XCTAssertTrue(session.isDPoPBound, "token_type DPoP")
            let claims = try await app.userInfo()
            XCTAssertEqual(claims["email"]?.string, "ada@example.com")

            // Introspection names the key the app holds (RFC 9449 section 6.2).
            var headers = H.form
            headers[.authorization] = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
            let introspected = try await H.call(
                server, .post, "/connect/introspect", "token=\(session.accessToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                headers: headers)
            XCTAssertEqual(introspected.json["token_type"] as? String, "DPoP", introspected.body)
            let jkt = try XCTUnwrap((introspected.json["cnf"] as? [String: Any])?["jkt"] as? String)
            XCTAssertEqual(jkt, try Self.thumbprint(key.publicJWK), "cnf.jkt is the RFC 7638 thumbprint of the app's key")
            XCTAssertEqual(key.thumbprint, jkt, "and the library computes the same")

            // Ten callers on an expired token: one refresh, with a proof, and all succeed.
            harness.clock.advance(16 * 60)
            let before = try await ModgudClientTests.refreshCount(harness)
            let emails = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<10 { group.addTask { try await app.userInfo()["email"]?.string } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(emails, Array(repeating: "ada@example.com", count: 10))
            let refreshes = try await ModgudClientTests.refreshCount(harness) - before
            XCTAssertEqual(refreshes, 1)
            let refreshed = try await app.currentSession()
            XCTAssertEqual(refreshed?.isDPoPBound, true)

            // Someone with a copy of the session file but not the key: the token is refused at
            // userinfo and the refresh is refused, and the session survives for its owner.
            let thief = Self.client(port, harness: harness, store: FileTokenStore(url: store.url), key: SoftwareDPoPKey())
            do {
                _ = try await thief.userInfo()
                XCTFail("another key's proof")
            } catch let error as ModgudError {
                guard case .invalidResponse(let status, _) = error, status == 401 else { return XCTFail("\(error)") }
            }
            do {
                try await thief.refresh()
                XCTFail("another key cannot refresh")
            } catch let error as ModgudError {
                guard case .oauth("invalid_dpop_proof", _, _) = error else { return XCTFail("\(error)") }
            }
            let bearerOnly = Self.client(port, harness: harness, store: FileTokenStore(url: store.url), key: nil)
            do {
                _ = try await bearerOnly.userInfo()
                XCTFail("a bound session without its key")
            } catch let error as ModgudError {
                guard case .storage = error else { return XCTFail("\(error)") }
            }
            let revoked = try await harness.core.pool.query("SELECT count(*) FROM events WHERE type = 'token_family.revoked'").first!.decode(Int.self, at: 0)
            XCTAssertEqual(revoked, 0, "a wrong key ends nothing")
            try await app.refresh()
            let still = try await app.userInfo()["email"]?.string
            XCTAssertEqual(still, "ada@example.com")
        }
    }

    /// The guide's API server (`Tests/Support/dpop_resource_server.py`, PyJWT and
    /// introspection) takes the app's bound token with its proof, and refuses a replay, the
    /// bearer downgrade, another key's proof and a proof for another token.
    func testAnAPIServerChecksTheBindingThroughIntrospection() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let key = SoftwareDPoPKey()
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = Self.client(port, harness: harness, store: MemoryTokenStore(), key: key)
            try await app.requestCode(email: "api@example.com")
            let session = try await app.signIn(email: "api@example.com", code: try await harness.code(for: "api@example.com"))
            let token = session.accessToken
            let url = URL(string: "https://api.acme.test/orders?page=2")!
            let good = try key.proof(method: "GET", url: url, accessToken: token)
            func request(_ authorization: String, _ proof: String?) -> [String: String] {
                var fields = ["method": "GET", "url": url.absoluteString, "authorization": authorization]
                fields["dpop"] = proof
                return fields
            }
            let input: [String: Any] = [
                "introspect": "http://localhost:\(port)/connect/introspect", "client_id": "conf", "client_secret": harness.confidentialSecret,
                "requests": [
                    request("DPoP \(token)", good), request("DPoP \(token)", good), request("Bearer \(token)", nil),
                    request("DPoP \(token)", try SoftwareDPoPKey().proof(method: "GET", url: url, accessToken: token)),
                    request("DPoP \(token)", try key.proof(method: "GET", url: url, accessToken: "another token")),
                    request("DPoP \(token)", try key.proof(method: "POST", url: url, accessToken: token)),
                ],
            ]
            let output = try PythonScript.run(
                "dpop_resource_server.py", input: String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self))
            let verdicts = try XCTUnwrap((try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [[String: Any]], output)
            let seen = verdicts.map { ($0["ok"] as? Bool == true) ? "ok" : ($0["error"] as? String ?? "?") }
            XCTAssertEqual(
                seen, ["ok", "invalid_dpop_proof", "invalid_token", "invalid_dpop_proof", "invalid_dpop_proof", "invalid_dpop_proof"],
                "good, replayed, bearer downgrade, another key, another token's ath, another method")
            XCTAssertEqual(verdicts.first?["sub"] as? String, session.subject)
        }
    }

    /// RFC 7638 for a P-256 JWK, by Python's hashlib (not our code).
    static func thumbprint(_ jwk: [String: String]) throws -> String {
        let script = """
            import base64, hashlib, json, sys
            jwk = json.load(sys.stdin)
            canonical = json.dumps({k: jwk[k] for k in ["crv", "kty", "x", "y"]}, separators=(",", ":"), sort_keys=True)
            print(base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode())
            """
        let input = String(decoding: try JSONSerialization.data(withJSONObject: jwk), as: UTF8.self)
        return try PythonScript.inline(script, input: input).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
