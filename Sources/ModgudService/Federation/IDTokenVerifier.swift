import Crypto
import Foundation
import JWTKit
import ModgudDomain
import WebAuthn

/// Verifies a provider's ID token for an exchange (issue 48) as OpenID Connect Core section
/// 3.1.3.7 lists the steps, with the provider's rules (`FederatedProvider`). Each failure is a
/// `FederationError.refused` whose reason names the step: `malformed`, `algorithm`, `signature`,
/// `issuer`, `audience`, `expired`, `issued_in_future`, `nonce`.
public struct IDTokenVerifier: Sendable {
    let keys: ProviderKeys
    /// Clock skew allowed on `exp` and `iat` (section 3.1.3.7 steps 9–10: "small").
    public var skew: TimeInterval = 60
    /// Algorithms accepted: asymmetric only (step 6; `none` and HMAC never).
    public static let algorithms: Set<String> = ["RS256", "ES256", "PS256"]
    static let maxLength = 16 * 1024

    public init(keys: ProviderKeys) {
        self.keys = keys
    }

    /// A compact JWS's claims, read before its signature is checked: only to choose which
    /// provider's keys check it (its `iss`, or an Apple notification's `aud`).
    /// - Parameter what: how refusals name the token ("the subject_token").
    static func unverifiedClaims(_ token: String, what: String) throws -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= maxLength, let body = Base64URL.decode(parts[1]),
            let claims = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        else { throw FederationError.refused(reason: "malformed", detail: "\(what) is not a signed JWT") }
        return claims
    }

    /// The verified claims of `token`.
    /// - Parameter nonceHash: what the token's `nonce` must be (the SHA-256 of the nonce this
    ///   server issued, hex); nil when the provider does not require one.
    public func verify(_ token: String, provider: FederatedProvider, nonceHash: String?, now: Date) async throws -> ProviderIDToken {
        let claims = try await signed(token, by: provider, as: ProviderIDToken.self)
        // Step 2: the issuer, exactly.
        guard provider.acceptedIssuers.contains(claims.iss) else { throw refused("issuer", "the ID token's iss is not \(provider.issuer)") }
        // Step 3: for one of the audiences this realm accepts for the provider.
        guard !Set(claims.aud.value).isDisjoint(with: provider.audiences) else {
            throw refused("audience", "the ID token's aud is none of \(provider.id)'s accepted audiences")
        }
        // Steps 9–10: current.
        guard claims.exp.value.addingTimeInterval(skew) > now else { throw refused("expired", "the ID token expired") }
        guard claims.iat.value.addingTimeInterval(-skew) <= now else { throw refused("issued_in_future", "the ID token's iat is in the future") }
        // Step 11: the nonce of this sign-in.
        if let nonceHash {
            guard let nonce = claims.nonce, ConstantTime.equal(Array(nonce.lowercased().utf8), Array(nonceHash.utf8)) else {
                throw refused("nonce", "the ID token's nonce is not the SHA-256 of this sign-in's nonce")
            }
        }
        return claims
    }

    /// The `nonce` an ID token must carry for the server nonce `nonce`: SHA-256, lower-case hex
    /// (what Sign in with Apple's `ASAuthorizationAppleIDRequest.nonce` and Google's
    /// `GetGoogleIdOption.setNonce` are given).
    public static func nonceHash(_ nonce: String) -> String {
        SHA256.hash(data: Array(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The claims of `token` once its signature verifies with one of `provider`'s published
    /// keys (section 3.1.3.7 steps 6–8): an asymmetric algorithm, a named key, a good signature.
    /// The claims themselves are the caller's to check.
    func signed<Claims: JWTPayload>(_ token: String, by provider: FederatedProvider, as type: Claims.Type) async throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= Self.maxLength, parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any]
        else { throw refused("malformed", "the token is not a signed JWT") }
        guard let alg = header["alg"] as? String, Self.algorithms.contains(alg) else {
            throw refused("algorithm", "the token's alg must be one of \(Self.algorithms.sorted().joined(separator: ", "))")
        }
        guard let kid = header["kid"] as? String, !kid.isEmpty, kid.count <= 256 else { throw refused("signature", "the token names no key (kid)") }
        guard let collection = try await keys.collection(provider.jwksURL, kid: kid) else {
            throw refused("signature", "the token's key \(kid) is not one of \(provider.id)'s")
        }
        do {
            return try await collection.verify(token, as: Claims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw refused("signature", "the token's signature does not verify")
        } catch {
            throw refused("malformed", "the token's claims are not of the expected shape")
        }
    }

    private func refused(_ reason: String, _ detail: String) -> FederationError {
        .refused(reason: reason, detail: detail)
    }
}
