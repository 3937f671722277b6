import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 48, its first part: a realm's providers set through the admin API, the exchange's nonce
/// endpoint, and ID tokens minted by a stand-in provider over a socket (Apple's and Google's
/// claim shapes, RS256, keys fetched from its JWKS URL) verified, or refused by the step they
/// fail.
final class FederationProviderTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]

    func testProvidersAreSetThroughTheAdminAPIAndTheirTokensVerifiedStepByStep() async throws {
        let idp = try StandInProvider()
        harness = try await H()
        let harness = self.harness!
        let federation = try XCTUnwrap(harness.core.federation)
        try await harness.app.test(.router) { client in
            let providers = #"""
                {"FederatedProviders":[
                 {"Id":"apple","Kind":"apple","JwksUrl":"\#(idp.appleJWKS)","Audiences":["com.example.app"]},
                 {"Id":"google","Kind":"google","JwksUrl":"\#(idp.googleJWKS)","Audiences":["server-client.apps.googleusercontent.com"],"Linking":"VerifiedEmail"}]}
                """#
            let set = try await H.call(client, .patch, "/admin/api/realms/dev", providers, headers: Self.admin)
            XCTAssertEqual(set.status, .ok, set.body)
            let listed = try XCTUnwrap((set.json["Realm"] as? [String: Any])?["FederatedProviders"] as? [[String: Any]], set.body)
            XCTAssertEqual(listed.map { $0["Issuer"] as? String }, ["https://appleid.apple.com", "https://accounts.google.com"], "Apple's and Google's issuers by default")
            XCTAssertEqual(listed.map { $0["Linking"] as? String }, ["EmailCode", "VerifiedEmail"])
            for refused in [
                #"{"FederatedProviders":[{"Id":"idp","Kind":"oidc","Audiences":["a"]}]}"#,
                #"{"FederatedProviders":[{"Id":"idp","Kind":"oidc","Issuer":"http://idp.example","JwksUrl":"http://idp.example/k","Audiences":["a"]}]}"#,
                #"{"FederatedProviders":[{"Id":"apple","Kind":"apple","Audiences":[]}]}"#,
                #"{"FederatedProviders":[{"Id":"a","Kind":"saml","Audiences":["a"]}]}"#,
            ] {
                let reply = try await H.call(client, .patch, "/admin/api/realms/dev", refused, headers: Self.admin)
                XCTAssertEqual(reply.status, .badRequest, "\(refused): \(reply.body)")
            }
            // The exchange's nonce: its hash is what the platform's request carries.
            let issued = try await H.call(client, .post, "/connect/federation/nonce", "", headers: [:])
            XCTAssertEqual(issued.status, .ok, issued.body)
            let nonce = try XCTUnwrap(issued.json["nonce"] as? String)
            let hash = SHA256.hash(data: Array(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
            XCTAssertEqual(issued.json["nonce_sha256"] as? String, hash)

            let realm = try await harness.core.administration.realms.get("dev")
            let configured = try XCTUnwrap(realm.settings?.federatedProviders)
            let (apple, google) = (configured[0], configured[1])
            func verify(_ provider: FederatedProvider, _ token: String) async -> String {
                do {
                    _ = try await federation.verifier.verify(token, provider: provider, nonceHash: hash, now: Date())
                    return "verified"
                } catch FederationError.refused(let reason, _) {
                    return reason
                } catch {
                    return "\(error)"
                }
            }
            let appleToken = try await idp.mint("apple", ["nonce": hash])
            let appleVerified = await verify(apple, appleToken)
            XCTAssertEqual(appleVerified, "verified")
            let googleVerified = await verify(google, try await idp.mint("google", ["nonce": hash]))
            XCTAssertEqual(googleVerified, "verified")
            let refusals: [(String, String, [String: Any])] = [
                ("audience", "apple", ["nonce": hash, "aud": "com.attacker.app"]),
                ("issuer", "google", ["nonce": hash, "iss": "https://accounts.example.com"]),
                ("expired", "apple", ["nonce": hash, "exp": Int(Date().timeIntervalSince1970) - 3600]),
                ("nonce", "google", ["nonce": NSNull()]),
                ("nonce", "apple", ["nonce": (hash.hasPrefix("0") ? "1" : "0") + hash.dropFirst()]),
                ("signature", "apple", ["nonce": hash, "_key": "stranger"]),
                ("algorithm", "google", ["nonce": hash, "_alg": "none"]),
                ("algorithm", "apple", ["nonce": hash, "_alg": "HS256"]),
            ]
            for (reason, name, claims) in refusals {
                let refused = await verify(name == "apple" ? apple : google, try await idp.mint(name, claims))
                XCTAssertEqual(refused, reason, "\(name) \(claims)")
            }
            // Google's key rotated: found at the first token that names it (the first fetch
            // was over a minute ago in no real deployment; here the cache is fresh, so the
            // rotated key waits for the interval: an unknown kid cannot make us fetch at will).
            try await idp.rotate("google")
            let rotated = await verify(google, try await idp.mint("google", ["nonce": hash, "_kid": "google-rotated"]))
            XCTAssertEqual(rotated, "signature", "within the refetch interval the set is not fetched again")
            let fetched = try await idp.fetches()
            XCTAssertEqual(fetched, ["apple": 1, "google": 1])
            let fresh = IDTokenVerifier(keys: ProviderKeys(refetchInterval: .zero))
            let rotatedFresh = try await fresh.verify(try await idp.mint("google", ["nonce": hash, "_kid": "google-rotated"]), provider: google, nonceHash: hash, now: Date())
            XCTAssertEqual(rotatedFresh.email, "someone@gmail.com")
            // Twenty tokens at once on an empty cache: one fetch, the others wait for it.
            let burst = IDTokenVerifier(keys: ProviderKeys(refetchInterval: .zero))
            let burstToken = try await idp.mint("apple", ["nonce": hash])
            let beforeBurst = try await idp.fetches()["apple"] ?? 0
            let verified = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await burst.verify(burstToken, provider: apple, nonceHash: hash, now: Date()).sub } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            XCTAssertEqual(verified.count, 20)
            let afterBurst = try await idp.fetches()["apple"] ?? 0
            XCTAssertEqual(afterBurst - beforeBurst, 1, "concurrent misses share one fetch")

            // The nonce is spent once, whichever instance sees it.
            try await federation.nonces.spend(nonce)
            do {
                try await federation.nonces.spend(nonce)
                XCTFail("a nonce spent twice")
            } catch FederationError.refused(let reason, _) {
                XCTAssertEqual(reason, "nonce")
            }
            do {
                try await federation.nonces.spend("made-up")
                XCTFail("a nonce this server never issued")
            } catch FederationError.refused(let reason, _) {
                XCTAssertEqual(reason, "nonce")
            }
        }
    }
}
