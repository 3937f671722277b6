import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sign in with Apple and Google (issue 48; docs/guides/sign-in-with-apple-and-google.md): the
/// platform's ID token exchanged for Modgud's tokens (RFC 8693).
///
/// ```swift
/// let nonce = try await client.federationNonce()
/// request.nonce = nonce.hashed                  // ASAuthorizationAppleIDRequest
/// // … the credential's identityToken, as UTF-8 text:
/// try await client.signIn(withAppleIDToken: token, nonce: nonce, givenName: name?.givenName, familyName: name?.familyName)
/// ```
extension ModgudClient {
    /// A sign-in's nonce: `hashed` goes to the platform's request, `nonce` back to Modgud.
    public struct FederationNonce: Sendable, Equatable {
        public var nonce: String
        /// SHA-256 of `nonce`, lower-case hex.
        public var hashed: String
    }

    static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"

    /// A new nonce for one sign-in (good for five minutes, spent by the sign-in).
    public func federationNonce() async throws -> FederationNonce {
        struct Issued: Decodable {
            var nonce: String
            var nonce_sha256: String
        }
        let data = try checked(try await exchange(Self.json(endpoint("/connect/federation/nonce"), nil)))
        let issued = try JSONDecoder().decode(Issued.self, from: data)
        return FederationNonce(nonce: issued.nonce, hashed: issued.nonce_sha256)
    }

    /// Signs in with Sign in with Apple's `identityToken`. Apple gives the person's name only
    /// at their first sign-in, to the app: pass it then, it names the new account.
    @discardableResult
    public func signIn(withAppleIDToken token: String, nonce: FederationNonce, givenName: String? = nil, familyName: String? = nil)
        async throws -> ModgudSession
    {
        var fields = exchangeFields(token, nonce)
        if let givenName { fields.append(("given_name", givenName)) }
        if let familyName { fields.append(("family_name", familyName)) }
        return try await self.token(fields)
    }

    /// Signs in with a Google ID token (Credential Manager's `GoogleIdTokenCredential.idToken`,
    /// requested with `setNonce(nonce.hashed)`).
    @discardableResult
    public func signIn(withGoogleIDToken token: String, nonce: FederationNonce) async throws -> ModgudSession {
        try await self.token(exchangeFields(token, nonce))
    }

    /// A provider account linked to the person's account.
    public struct LinkedIdentity: Decodable, Sendable, Equatable {
        /// The realm's provider id (`apple`, `google`, …).
        public var provider: String
        /// `apple`, `google` or `oidc`; nil when the realm no longer names the provider.
        public var kind: String?
        /// ISO 8601.
        public var linkedAt: String
    }

    /// The person's linked provider accounts (`GET /connect/identities`).
    public func linkedIdentities() async throws -> [LinkedIdentity] {
        try JSONDecoder().decode([LinkedIdentity].self, from: try checked(try await send(URLRequest(url: endpoint("/connect/identities")))))
    }

    /// Unlinks the person's account at `provider`; the sign-in must be fresh
    /// (`.reauthenticationRequired` otherwise), as for deleting a passkey.
    public func unlinkIdentity(provider: String) async throws {
        var request = URLRequest(url: endpoint("/connect/identities/\(Self.pathSegment(provider))"))
        request.httpMethod = "DELETE"
        _ = try checked(try await send(request))
    }

    private func exchangeFields(_ token: String, _ nonce: FederationNonce) -> [(String, String)] {
        grant(Self.tokenExchange) + [("subject_token", token), ("subject_token_type", Self.idTokenType), ("nonce", nonce.nonce)]
    }
}
