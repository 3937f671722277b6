import Crypto
import Foundation
import ModgudDomain
import WebAuthn

/// Redeems a Sign in with Apple authorization code at Apple's token endpoint (issue 48; Apple's
/// "Generate and validate tokens", Auth0's native social `apple-authz-code` form): the app sends
/// the `authorizationCode` of its `ASAuthorizationAppleIDCredential`; Modgud posts it with a
/// client secret (an ES256 JWT signed by the team's Sign in with Apple key) and gets Apple's ID
/// token, which the exchange then verifies like any other.
///
/// The key is sealed with the master key (`KeySealer`, bound to the realm and provider) when an
/// operator sets it, and opened only to sign a client secret.
public struct AppleAuthorizationCodes: Sendable {
    let sealer: KeySealer
    let poster: any FormPoster

    public init(sealer: KeySealer, poster: any FormPoster = URLSessionFormPoster()) {
        self.sealer = sealer
        self.poster = poster
    }

    /// What a sealed key is bound to.
    static func keyBinding(provider: String) -> String { "federation/\(provider)/apple-client-secret" }

    /// Validates a .p8 key (PKCS#8 PEM, P-256) and seals it: the sealed DER (base64) and the
    /// public key (PEM) to show.
    public func seal(privateKeyPEM: String, realm: String, provider: String) throws -> (sealed: String, publicKey: String) {
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw DomainError("Federation.InvalidAppleKey", "PrivateKey must be the .p8 Sign in with Apple key (a P-256 PKCS#8 PEM).")
        }
        let sealed = try sealer.seal(Array(key.derRepresentation), realm: realm, kid: Self.keyBinding(provider: provider))
        return (Data(sealed).base64EncodedString(), key.publicKey.pemRepresentation)
    }

    /// The client secret for one redemption: `{"alg": "ES256", "kid"}` over `{iss: team, iat,
    /// exp: iat + 300, aud: "https://appleid.apple.com", sub: client id}`.
    func clientSecret(_ endpoint: AppleTokenEndpoint, realm: String, provider: String, now: Date) throws -> String {
        guard let sealed = Data(base64Encoded: endpoint.sealedKey) else { throw FederationError.keysUnavailable("the Apple key is not readable") }
        let der = try sealer.open(Array(sealed), realm: realm, kid: Self.keyBinding(provider: provider))
        let key = try P256.Signing.PrivateKey(derRepresentation: der)
        let issued = Int(now.timeIntervalSince1970)
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": endpoint.keyID], options: [.sortedKeys])
        let claims = try JSONSerialization.data(
            withJSONObject: ["iss": endpoint.teamID, "iat": issued, "exp": issued + 300, "aud": "https://appleid.apple.com", "sub": endpoint.clientID],
            options: [.sortedKeys, .withoutEscapingSlashes])
        let input = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(claims))
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// Apple's ID token for `code`. Apple's refusal (`invalid_grant`: a spent, expired or
    /// foreign code; `invalid_client`: the key or ids) is `FederationError.refused` with the
    /// reason `authorization_code`; Apple out of reach is `keysUnavailable` (retry).
    func redeem(_ code: String, endpoint: AppleTokenEndpoint, realm: String, provider: String, now: Date) async throws -> String {
        guard !code.isEmpty, code.utf8.count <= 1024 else {
            throw FederationError.refused(reason: "authorization_code", detail: "the subject_token is not an authorization code")
        }
        let form = [
            ("client_id", endpoint.clientID), ("client_secret", try clientSecret(endpoint, realm: realm, provider: provider, now: now)), ("code", code),
            ("grant_type", "authorization_code"),
        ]
        let (status, body): (Int, [UInt8])
        do {
            (status, body) = try await poster.post(endpoint.tokenURL, form: form)
        } catch {
            throw FederationError.keysUnavailable("Apple's token endpoint could not be reached: \(type(of: error))")
        }
        let answer = (try? JSONSerialization.jsonObject(with: Data(body.prefix(64 * 1024)))) as? [String: Any] ?? [:]
        if status == 200, let idToken = answer["id_token"] as? String { return idToken }
        guard (400..<500).contains(status), let error = answer["error"] as? String else {
            throw FederationError.keysUnavailable("Apple's token endpoint answered \(status)")
        }
        throw FederationError.refused(reason: "authorization_code", detail: "Apple refused the code (\(error.prefix(64)))")
    }
}
