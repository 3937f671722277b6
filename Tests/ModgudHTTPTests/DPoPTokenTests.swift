import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 29: DPoP at the token endpoint with proofs made by PyJWT. A sign-in with a proof
/// gets `token_type: DPoP` and a public client's refresh token bound to the key; a bad proof
/// spends nothing; a refresh needs the same key, and another key is refused without ending
/// the session; a client clock minutes off is told so and settles it with the nonce.
final class DPoPTokenTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func headers(_ proof: String?) -> HTTPFields {
        var headers = H.form
        if let proof { headers[HTTPField.Name("DPoP")!] = proof }
        return headers
    }

    /// The `cnf.jkt` claim of a JWT access token.
    static func confirmation(_ token: String?) throws -> String? {
        let parts = try XCTUnwrap(token).split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let claims = try XCTUnwrap(try JSONSerialization.jsonObject(with: try XCTUnwrap(Data(base64Encoded: payload))) as? [String: Any])
        return (claims["cnf"] as? [String: Any])?["jkt"] as? String
    }

    func testABoundSessionFromSignInThroughRefresh() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let address = "dpop@example.com"
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "jwt-app",
            settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "email", "offline_access"], accessTokenFormat: .jwt),
            metadata: .init())
        try await harness.app.test(.router) { client in
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let endpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            func proofs(_ specs: [[String: Any]]) throws -> [(proof: String, jkt: String, key: String)] {
                try DPoPProofMaker.make(specs, htu: endpoint, iat: iat)
            }
            _ = try await H.requestCode(client, address)
            let code = try await harness.code(for: address)
            let signIn: [(String, String)] = [
                ("grant_type", "urn:cocoar:otp"), ("client_id", "jwt-app"), ("username", address), ("otp_code", code),
                ("scope", "openid email offline_access"),
            ]
            // A proof for another URL is refused before the code is looked at.
            let made = try proofs([["key": 1, "htu": endpoint + "/elsewhere"], ["key": 1], ["key": 2], ["key": 1], ["key": 1, "iat": iat - 900]])
            let wrongURL = try await H.token(client, signIn, headers: Self.headers(made[0].proof))
            XCTAssertEqual(wrongURL.status, .badRequest)
            XCTAssertEqual(wrongURL.json["error"] as? String, "invalid_dpop_proof", wrongURL.body)
            let bound = try await H.token(client, signIn, headers: Self.headers(made[1].proof))
            XCTAssertEqual(bound.status, .ok, "the code was not spent by the refused proof: \(bound.body)")
            XCTAssertEqual(bound.json["token_type"] as? String, "DPoP")
            XCTAssertNotNil(bound.headers[HTTPField.Name("DPoP-Nonce")!])
            XCTAssertEqual(try Self.confirmation(bound.json["access_token"] as? String), made[1].jkt, "cnf.jkt names the proof's key (RFC 9449 section 6.1)")
            let refreshToken = try XCTUnwrap(bound.json["refresh_token"] as? String)
            let refresh: [(String, String)] = [("grant_type", "refresh_token"), ("client_id", "jwt-app"), ("refresh_token", refreshToken)]

            // The same proof again is a replay.
            let replay = try await H.token(client, refresh, headers: Self.headers(made[1].proof))
            XCTAssertEqual(replay.json["error"] as? String, "invalid_dpop_proof", replay.body)
            // No proof, or another key's: refused, and the session lives on.
            let bare = try await H.token(client, refresh, headers: Self.headers(nil))
            XCTAssertEqual(bare.json["error"] as? String, "invalid_dpop_proof", bare.body)
            let stranger = try await H.token(client, refresh, headers: Self.headers(made[2].proof))
            XCTAssertEqual(stranger.json["error"] as? String, "invalid_dpop_proof", stranger.body)
            let rotated = try await H.token(client, refresh, headers: Self.headers(made[3].proof))
            XCTAssertEqual(rotated.status, .ok, "the right key still refreshes: \(rotated.body)")
            XCTAssertEqual(rotated.json["token_type"] as? String, "DPoP")
            XCTAssertEqual(try Self.confirmation(rotated.json["access_token"] as? String), made[1].jkt)

            // A clock 15 minutes slow: told by how much, with a nonce; the retry with it passes.
            let next = try XCTUnwrap(rotated.json["refresh_token"] as? String)
            let nextRefresh: [(String, String)] = [("grant_type", "refresh_token"), ("client_id", "jwt-app"), ("refresh_token", next)]
            let stale = try await H.token(client, nextRefresh, headers: Self.headers(made[4].proof))
            XCTAssertEqual(stale.json["error"] as? String, "use_dpop_nonce", stale.body)
            XCTAssertTrue((stale.json["error_description"] as? String)?.contains("900 s behind") == true, stale.body)
            let nonce = try XCTUnwrap(stale.headers[HTTPField.Name("DPoP-Nonce")!])
            let retried = try proofs([["key_pem": made[1].key, "iat": iat - 900, "nonce": nonce]])[0]
            let settled = try await H.token(client, nextRefresh, headers: Self.headers(retried.proof))
            XCTAssertEqual(settled.status, .ok, settled.body)
        }
    }

    /// The code grant claims its proof's jti in the pipeline of the code's read (issue 49): a
    /// proof used for one sign-in is refused for the next, and that refusal spends nothing,
    /// so the code then signs in with a fresh proof.
    func testACodeGrantsProofIsSingleUseToo() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let endpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let made = try DPoPProofMaker.make([["key": 1], ["key": 1]], htu: endpoint, iat: Int(harness.clock.now().timeIntervalSince1970))
            func signIn(_ address: String) async throws -> [(String, String)] {
                [("grant_type", "urn:cocoar:otp"), ("client_id", "app"), ("username", address), ("otp_code", try await harness.code(for: address)),
                 ("scope", "openid")]
            }
            for address in ["first@example.com", "second@example.com"] { _ = try await H.requestCode(client, address) }
            let first = try await H.token(client, try await signIn("first@example.com"), headers: Self.headers(made[0].proof))
            XCTAssertEqual(first.json["token_type"] as? String, "DPoP", first.body)
            let replayed = try await H.token(client, try await signIn("second@example.com"), headers: Self.headers(made[0].proof))
            XCTAssertEqual(replayed.json["error"] as? String, "invalid_dpop_proof", replayed.body)
            let fresh = try await H.token(client, try await signIn("second@example.com"), headers: Self.headers(made[1].proof))
            XCTAssertEqual(fresh.json["token_type"] as? String, "DPoP", "the replay spent nothing: \(fresh.body)")
        }
    }

    /// A client set to `required` needs a proof on every token request; one set to `off`
    /// ignores the header (bearer tokens); the admin API sets and shows the policy.
    func testTheClientsDPoPPolicy() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        let settings = ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"])
        for id in ["strict", "relaxed"] {
            _ = try await harness.core.administration.clients.create(realm: "dev", id: id, settings: settings, metadata: .init())
        }
        try await harness.app.test(.router) { client in
            for (id, policy) in [("strict", "required"), ("relaxed", "off")] {
                let patched = try await H.call(client, .patch, "/admin/api/realms/dev/clients/\(id)", #"{"Dpop":"\#(policy)"}"#, headers: admin)
                XCTAssertEqual(patched.status, .ok, patched.body)
                XCTAssertEqual((patched.json["Client"] as? [String: Any])?["Dpop"] as? String, policy, patched.body)
            }
            let invalid = try await H.call(client, .patch, "/admin/api/realms/dev/clients/strict", #"{"Dpop":"sometimes"}"#, headers: admin)
            XCTAssertEqual(invalid.json["title"] as? String, "Client.InvalidDpop", invalid.body)

            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertEqual(discovery.json["dpop_signing_alg_values_supported"] as? [String], ["ES256", "EdDSA"])
            let endpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let made = try DPoPProofMaker.make([[:], [:]], htu: endpoint, iat: Int(harness.clock.now().timeIntervalSince1970))
            for address in ["strict@example.com", "relaxed@example.com"] {
                _ = try await H.requestCode(client, address)
            }
            let strictCode = try await harness.code(for: "strict@example.com")
            let strictFields: [(String, String)] = [
                ("grant_type", "urn:cocoar:otp"), ("client_id", "strict"), ("username", "strict@example.com"), ("otp_code", strictCode),
            ]
            let bare = try await H.token(client, strictFields, headers: Self.headers(nil))
            XCTAssertEqual(bare.json["error"] as? String, "invalid_dpop_proof", bare.body)
            let proven = try await H.token(client, strictFields, headers: Self.headers(made[0].proof))
            XCTAssertEqual(proven.json["token_type"] as? String, "DPoP", proven.body)
            // A reference token: introspection tells the app's API the binding (RFC 9449 section 6.2).
            let basic = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
            var introspectionHeaders = H.form
            introspectionHeaders[.authorization] = basic
            let token = try XCTUnwrap(proven.json["access_token"] as? String)
            let introspected = try await H.call(
                client, .post, "/connect/introspect", "token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                headers: introspectionHeaders)
            XCTAssertEqual(introspected.json["active"] as? Bool, true, introspected.body)
            XCTAssertEqual(introspected.json["token_type"] as? String, "DPoP")
            XCTAssertEqual((introspected.json["cnf"] as? [String: Any])?["jkt"] as? String, made[0].jkt)

            let relaxedCode = try await harness.code(for: "relaxed@example.com")
            let relaxed = try await H.token(
                client, [("grant_type", "urn:cocoar:otp"), ("client_id", "relaxed"), ("username", "relaxed@example.com"), ("otp_code", relaxedCode)],
                headers: Self.headers(made[1].proof))
            XCTAssertEqual(relaxed.json["token_type"] as? String, "Bearer", "a client with DPoP off ignores the header: \(relaxed.body)")
        }
    }

    /// A refused proof on a refresh is counted against the rate limits like any other try
    /// (the refresh grant counts itself in its lookup, which a refused proof never reaches).
    func testRefusedProofsAreRateLimited() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        try await harness.app.test(.router) { client in
            let limited = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"RateLimits":{"token.ip":{"Limit":3,"WindowSeconds":3600,"Burst":3}}}"#, headers: admin)
            XCTAssertEqual(limited.status, .ok, limited.body)
            let made = try DPoPProofMaker.make(
                Array(repeating: ["htu": "https://elsewhere.example/connect/token"], count: 6), htu: "", iat: Int(harness.clock.now().timeIntervalSince1970))
            var errors: [String] = []
            for proof in made {
                let answer = try await H.token(
                    client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", "made-up")], headers: Self.headers(proof.proof))
                errors.append(answer.status == .tooManyRequests ? "429" : (answer.json["error"] as? String ?? answer.body))
            }
            XCTAssertEqual(errors.first, "invalid_dpop_proof")
            XCTAssertEqual(errors.last, "429", "refused proofs count: \(errors)")
        }
    }
}
