import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 29, the resource side (RFC 9449 section 7), with proofs made by PyJWT: userinfo and
/// the passkey endpoints take `Authorization: DPoP` with a proof of the token's key, and refuse
/// a bound token sent as Bearer, a proof without `ath` for the token, another key's proof, a
/// replay, a proof for another URL, and a stale `iat` until the client uses the nonce.
final class DPoPResourceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func headers(scheme: String, token: String, proof: String?) -> HTTPFields {
        var headers: HTTPFields = [.authorization: "\(scheme) \(token)"]
        if let proof { headers[HTTPField.Name("DPoP")!] = proof }
        return headers
    }

    /// Signs `address` in with `jwt-app`, with a proof by `key` (or none: a bearer token).
    static func signIn(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, _ address: String, proof: String?) async throws -> String {
        _ = try await H.requestCode(client, address)
        let code = try await harness.code(for: address)
        let fields: [(String, String)] = [
            ("grant_type", "urn:cocoar:otp"), ("client_id", "jwt-app"), ("username", address), ("otp_code", code), ("scope", "openid email"),
        ]
        let signedIn = try await H.token(client, fields, headers: DPoPTokenTests.headers(proof))
        XCTAssertEqual(signedIn.json["token_type"] as? String, proof == nil ? "Bearer" : "DPoP", signedIn.body)
        return try XCTUnwrap(signedIn.json["access_token"] as? String, signedIn.body)
    }

    func testBoundTokensAtUserinfoAndThePasskeyEndpoints() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "jwt-app", settings: ClientSettings(type: .public, grants: [.otp], allowedScopes: ["openid", "email"], accessTokenFormat: .jwt),
            metadata: .init())
        try await harness.app.test(.router) { client in
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let tokenEndpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let userinfo = try XCTUnwrap(discovery.json["userinfo_endpoint"] as? String)
            let passkeys = tokenEndpoint.replacingOccurrences(of: "/connect/token", with: "/connect/passkey")
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            let signInProof = try DPoPProofMaker.make([["key": 1]], htu: tokenEndpoint, iat: iat)[0]
            let token = try await Self.signIn(client, harness, "resource@example.com", proof: signInProof.proof)
            let bearerToken = try await Self.signIn(client, harness, "plain@example.com", proof: nil)
            let key = signInProof.key
            let get: [String: Any] = ["key_pem": key, "htm": "GET", "access_token": token]
            let made = try DPoPProofMaker.make(
                [
                    get, ["key_pem": key, "htm": "GET"], get.merging(["access_token": bearerToken]) { $1 }, ["key": 2, "htm": "GET", "access_token": token],
                    get.merging(["htu": tokenEndpoint]) { $1 }, get.merging(["iat": iat + 600]) { $1 },
                    get.merging(["htu": passkeys]) { $1 },
                ], htu: userinfo, iat: iat)

            // Without credentials both schemes are offered, DPoP with its algorithms.
            let anonymous = try await H.call(client, .get, "/connect/userinfo", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
            XCTAssertEqual(anonymous.headers[values: .wwwAuthenticate], [#"Bearer realm="modgud""#, #"DPoP realm="modgud", algs="ES256 EdDSA""#])
            // The bearer downgrade (section 7.2): refused, with a DPoP challenge.
            let downgrade = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "Bearer", token: token, proof: nil))
            XCTAssertEqual(downgrade.status, .unauthorized)
            XCTAssertTrue(downgrade.headers[.wwwAuthenticate]?.hasPrefix(#"DPoP realm="modgud", error="invalid_token""#) == true, "\(downgrade.headers)")
            // Each refusal of the proof, then the good proof, then its replay.
            let refusals: [(String?, String)] = [
                (nil, "no proof"), (made[1].proof, "no ath"), (made[2].proof, "ath of another token"), (made[3].proof, "another key"),
                (made[4].proof, "another URL"),
            ]
            for (proof, why) in refusals {
                let refused = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: proof))
                XCTAssertEqual(refused.status, .unauthorized, why)
                XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains(#"error="invalid_dpop_proof""#) == true, "\(why): \(refused.headers)")
            }
            let claims = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "dpop", token: token, proof: made[0].proof))
            XCTAssertEqual(claims.status, .ok, claims.body)
            XCTAssertEqual(claims.json["email"] as? String, "resource@example.com")
            let replay = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: made[0].proof))
            XCTAssertTrue(replay.headers[.wwwAuthenticate]?.contains(#"error="invalid_dpop_proof""#) == true, "a replay: \(replay.headers)")

            // A clock ten minutes fast: use_dpop_nonce with a nonce (section 9), and the retry passes.
            let fast = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: made[5].proof))
            XCTAssertEqual(fast.status, .unauthorized)
            XCTAssertTrue(fast.headers[.wwwAuthenticate]?.contains(#"error="use_dpop_nonce""#) == true, "\(fast.headers)")
            XCTAssertTrue(fast.headers[.wwwAuthenticate]?.contains("600 s ahead") == true, "\(fast.headers)")
            let nonce = try XCTUnwrap(fast.headers[HTTPField.Name("DPoP-Nonce")!])
            let retried = try DPoPProofMaker.make([get.merging(["iat": iat + 600, "nonce": nonce]) { $1 }], htu: userinfo, iat: iat)[0]
            let settled = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: retried.proof))
            XCTAssertEqual(settled.status, .ok, settled.body)

            // The passkey list takes the same proof of possession.
            let listed = try await H.call(client, .get, "/connect/passkey", "", headers: Self.headers(scheme: "DPoP", token: token, proof: made[6].proof))
            XCTAssertEqual(listed.status, .ok, listed.body)
            // A bearer token is not a DPoP token (section 7.1), and stays a good bearer token.
            let proofForBearer = try await H.call(
                client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: bearerToken, proof: made[2].proof))
            XCTAssertTrue(proofForBearer.headers[.wwwAuthenticate]?.contains(#"DPoP realm="modgud", error="invalid_token""#) == true)
            let plain = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "Bearer", token: bearerToken, proof: nil))
            XCTAssertEqual(plain.json["email"] as? String, "plain@example.com", plain.body)
        }
    }

    /// A client with `DpopNonce` needs a server nonce in every proof, at the token endpoint
    /// and where its tokens are used, whatever the proof's `iat`.
    func testAClientThatAlwaysWantsTheNonce() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "jwt-app", settings: ClientSettings(type: .public, grants: [.otp], allowedScopes: ["openid", "email"], accessTokenFormat: .jwt),
            metadata: .init())
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        try await harness.app.test(.router) { client in
            let patched = try await H.call(client, .patch, "/admin/api/realms/dev/clients/jwt-app", #"{"DpopNonce":true}"#, headers: admin)
            XCTAssertEqual((patched.json["Client"] as? [String: Any])?["DpopNonce"] as? Bool, true, patched.body)
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let tokenEndpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let userinfo = try XCTUnwrap(discovery.json["userinfo_endpoint"] as? String)
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            let first = try DPoPProofMaker.make([["key": 1]], htu: tokenEndpoint, iat: iat)[0]
            _ = try await H.requestCode(client, "nonce@example.com")
            let code = try await harness.code(for: "nonce@example.com")
            let fields: [(String, String)] = [
                ("grant_type", "urn:cocoar:otp"), ("client_id", "jwt-app"), ("username", "nonce@example.com"), ("otp_code", code), ("scope", "openid email"),
            ]
            let asked = try await H.token(client, fields, headers: DPoPTokenTests.headers(first.proof))
            XCTAssertEqual(asked.json["error"] as? String, "use_dpop_nonce", asked.body)
            let nonce = try XCTUnwrap(asked.headers[HTTPField.Name("DPoP-Nonce")!])
            let second = try DPoPProofMaker.make([["key_pem": first.key, "nonce": nonce]], htu: tokenEndpoint, iat: iat)[0]
            let signedIn = try await H.token(client, fields, headers: DPoPTokenTests.headers(second.proof))
            XCTAssertEqual(signedIn.json["token_type"] as? String, "DPoP", "the code was not spent by the first try: \(signedIn.body)")
            let token = try XCTUnwrap(signedIn.json["access_token"] as? String)
            let get: [String: Any] = ["key_pem": first.key, "htm": "GET", "access_token": token]
            let made = try DPoPProofMaker.make([get, get.merging(["nonce": nonce]) { $1 }], htu: userinfo, iat: iat)
            let withoutNonce = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: made[0].proof))
            XCTAssertTrue(withoutNonce.headers[.wwwAuthenticate]?.contains(#"error="use_dpop_nonce""#) == true, "\(withoutNonce.headers)")
            let withNonce = try await H.call(client, .get, "/connect/userinfo", "", headers: Self.headers(scheme: "DPoP", token: token, proof: made[1].proof))
            XCTAssertEqual(withNonce.status, .ok, withNonce.body)
        }
    }
}
