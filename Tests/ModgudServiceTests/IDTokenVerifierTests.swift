import Crypto
import Foundation
import JWTKit
import ModgudDomain
@testable import ModgudService
import Synchronization
import WebAuthn
import XCTest

/// Issue 48: each step of OpenID Connect Core 3.1.3.7 that the exchange runs on a provider's
/// ID token refuses by name, and the provider's keys are fetched again for an unknown `kid`,
/// but not without bound. The keys here are a test provider's, served by a fetcher in memory;
/// the exchange over HTTP against a provider served over a socket is FederationExchangeTests'.
final class IDTokenVerifierTests: XCTestCase {
    /// A provider's key set in memory: its documents, and how often each was fetched.
    final class Publisher: JWKSFetcher {
        let keys = Mutex<[(kid: String, key: P256.Signing.PrivateKey)]>([])
        let fetches = Mutex(0)

        func publish(_ kid: String) -> P256.Signing.PrivateKey {
            let key = P256.Signing.PrivateKey()
            keys.withLock { $0.append((kid, key)) }
            return key
        }

        func fetch(_ url: String) async throws -> [UInt8] {
            fetches.withLock { $0 += 1 }
            let published = keys.withLock { $0 }.map { kid, key in
                let point = key.publicKey.x963Representation
                return ["kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                    "x": Base64URL.encode(Array(point[1..<33])), "y": Base64URL.encode(Array(point[33..<65]))]
            }
            return Array(try JSONSerialization.data(withJSONObject: ["keys": published]))
        }
    }

    let provider = FederatedProvider(
        id: "apple", kind: .apple, issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys", audiences: ["com.example.app"])
    let now = Date()

    func claims(_ change: (inout [String: Any]) -> Void = { _ in }) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": "https://appleid.apple.com", "aud": "com.example.app", "sub": "001234.abcdef", "iat": Int(now.timeIntervalSince1970),
            "exp": Int(now.timeIntervalSince1970) + 600, "nonce": IDTokenVerifier.nonceHash("server-nonce"), "email": "x@privaterelay.appleid.com",
            "email_verified": "true", "is_private_email": "true",
        ]
        change(&claims)
        return claims
    }

    /// A compact JWS by `key` with `header` members.
    func token(_ claims: [String: Any], key: P256.Signing.PrivateKey, header: [String: Any]) throws -> String {
        let head = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])))
        let body = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])))
        let signature = try key.signature(for: Array("\(head).\(body)".utf8)).rawRepresentation
        return "\(head).\(body).\(Base64URL.encode(Array(signature)))"
    }

    func refusal(_ verifier: IDTokenVerifier, _ token: String, nonce: String? = IDTokenVerifier.nonceHash("server-nonce")) async -> String? {
        do {
            _ = try await verifier.verify(token, provider: provider, nonceHash: nonce, now: now)
            return nil
        } catch FederationError.refused(let reason, _) {
            return reason
        } catch {
            return "\(error)"
        }
    }

    func testEachStepRefusesByName() async throws {
        let publisher = Publisher()
        let key = publisher.publish("k1")
        let verifier = IDTokenVerifier(keys: ProviderKeys(fetcher: publisher))
        let header: [String: Any] = ["alg": "ES256", "kid": "k1"]
        let good = try await verifier.verify(try token(claims(), key: key, header: header), provider: provider, nonceHash: IDTokenVerifier.nonceHash("server-nonce"), now: now)
        XCTAssertEqual(good.sub, "001234.abcdef")
        XCTAssertEqual(good.emailVerified?.value, true, "Apple's string booleans read as booleans")
        XCTAssertEqual(good.isPrivateEmail?.value, true)
        let cases: [(String, String)] = [
            ("issuer", try token(claims { $0["iss"] = "https://evil.example" }, key: key, header: header)),
            ("audience", try token(claims { $0["aud"] = "com.other.app" }, key: key, header: header)),
            ("expired", try token(claims { $0["exp"] = Int(self.now.timeIntervalSince1970) - 120 }, key: key, header: header)),
            ("issued_in_future", try token(claims { $0["iat"] = Int(self.now.timeIntervalSince1970) + 600 }, key: key, header: header)),
            ("nonce", try token(claims { $0["nonce"] = IDTokenVerifier.nonceHash("another") }, key: key, header: header)),
            ("nonce", try token(claims { $0["nonce"] = nil }, key: key, header: header)),
            ("signature", try token(claims(), key: P256.Signing.PrivateKey(), header: header)),
            ("signature", try token(claims(), key: key, header: ["alg": "ES256", "kid": "unknown"])),
            ("algorithm", try token(claims(), key: key, header: ["alg": "HS256", "kid": "k1"])),
            ("malformed", "not.a.jwt"),
        ]
        for (reason, token) in cases {
            let refused = await refusal(verifier, token)
            XCTAssertEqual(refused, reason, token)
        }
        // `alg: none`, unsigned.
        let unsigned = Base64URL.encode(Array(#"{"alg":"none","kid":"k1"}"#.utf8)) + "."
            + Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: claims()))) + "."
        let noneRefused = await refusal(verifier, unsigned)
        XCTAssertEqual(noneRefused, "algorithm")
        // A provider that needs no nonce takes a token without one.
        let withoutNonce = await refusal(verifier, try token(claims { $0["nonce"] = nil }, key: key, header: header), nonce: nil)
        XCTAssertNil(withoutNonce)
    }

    /// A rotated key is fetched at its first token; a made-up `kid` fetches at most once per interval.
    func testAnUnknownKidFetchesTheKeysAgainButNotWithoutBound() async throws {
        let publisher = Publisher()
        let first = publisher.publish("k1")
        let verifier = IDTokenVerifier(keys: ProviderKeys(fetcher: publisher, refetchInterval: .seconds(3600)))
        let nonce = IDTokenVerifier.nonceHash("server-nonce")
        _ = try await verifier.verify(try token(claims(), key: first, header: ["alg": "ES256", "kid": "k1"]), provider: provider, nonceHash: nonce, now: now)
        XCTAssertEqual(publisher.fetches.withLock { $0 }, 1)
        for _ in 0..<5 {
            let refused = await refusal(verifier, try token(claims(), key: first, header: ["alg": "ES256", "kid": "made-up-\(UUID())"]))
            XCTAssertEqual(refused, "signature")
        }
        XCTAssertEqual(publisher.fetches.withLock { $0 }, 1, "within the interval, unknown kids fetch nothing")
        // With no interval, a rotated key is found at its first token.
        let rotating = IDTokenVerifier(keys: ProviderKeys(fetcher: publisher, refetchInterval: .zero))
        _ = try await rotating.verify(try token(claims(), key: first, header: ["alg": "ES256", "kid": "k1"]), provider: provider, nonceHash: nonce, now: now)
        let second = publisher.publish("k2")
        let rotated = try await rotating.verify(try token(claims(), key: second, header: ["alg": "ES256", "kid": "k2"]), provider: provider, nonceHash: nonce, now: now)
        XCTAssertEqual(rotated.iss, "https://appleid.apple.com")
    }

    func testGoogleTokensMayNameTheIssuerWithoutScheme() async throws {
        let publisher = Publisher()
        let key = publisher.publish("g1")
        let google = FederatedProvider.google(audiences: ["web-client.apps.googleusercontent.com"])
        let verifier = IDTokenVerifier(keys: ProviderKeys(fetcher: publisher))
        let token = try token(
            claims {
                $0["iss"] = "accounts.google.com"
                $0["aud"] = "web-client.apps.googleusercontent.com"
                $0["email_verified"] = true
            }, key: key, header: ["alg": "ES256", "kid": "g1"])
        let verified = try await verifier.verify(token, provider: google, nonceHash: IDTokenVerifier.nonceHash("server-nonce"), now: now)
        XCTAssertEqual(verified.emailVerified?.value, true)
        XCTAssertThrowsError(try FederatedProvider(id: "x y", kind: .oidc, issuer: "https://a", jwksURL: "https://a/k", audiences: ["a"]).validate())
        XCTAssertThrowsError(try FederatedProvider(id: "idp", kind: .oidc, issuer: "http://idp.example", jwksURL: "https://a/k", audiences: ["a"]).validate())
        XCTAssertThrowsError(try FederatedProvider(id: "idp", kind: .oidc, issuer: "https://idp.example", jwksURL: "https://a/k", audiences: []).validate())
        XCTAssertNoThrow(try FederatedProvider(id: "idp", kind: .oidc, issuer: "http://localhost:9000", jwksURL: "http://localhost:9000/k", audiences: ["a"]).validate())
    }
}
