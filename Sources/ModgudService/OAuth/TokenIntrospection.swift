import EventSourcing
import Foundation
import ModgudDomain

/// What a presented access token is (issue 68, out of `TokenService`): RFC 7662 introspection
/// and the bearer lookups of the protected endpoints, and whether a sign-in was revoked.
public struct TokenIntrospection: Sendable {
    let families: AggregateRegistry<TokenFamily>
    let tokens: TokenTables
    let keys: SigningKeyRing
    let now: @Sendable () -> Date

    /// RFC 7662: whether an access token is active, and what it allows. Unknown, expired and
    /// revoked tokens are all just inactive.
    public func introspect(realm: String, token: String) async throws -> Introspection {
        guard let found = try await liveAccessToken(realm: realm, token: token) else { return .inactive }
        var result = Introspection(
            active: true, scope: found.scopes.joined(separator: " "), clientID: found.clientID,
            subject: found.userID?.uuidString.lowercased() ?? found.clientID, audiences: found.audiences,
            expiresAt: Int(found.expiresAt.timeIntervalSince1970), tokenType: found.dpopKey == nil ? "Bearer" : "DPoP", dpopKey: found.dpopKey,
            sessionID: found.userID == nil ? nil : found.familyID.uuidString.lowercased())
        result.clientAttestation = found.attestation
        if found.userID != nil, let started = try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: found.familyID)).current().state.started {
            result.authTime = Int(started.authTime.timeIntervalSince1970)
            result.amr = started.amr
            result.acr = started.acr ?? AuthenticationContext.acr(amr: started.amr)
        }
        return result
    }

    /// Whether the sign-in `familyID` was revoked (code reuse, refresh token reuse, logout, an
    /// operator): read from the store, so a revocation on any instance counts (issue 69: a
    /// token response's `auth_session` ends with its sign-in).
    public func isRevoked(realm: String, familyID: UUID) async throws -> Bool {
        try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID)).current().state.revoked != nil
    }

    /// The live access token presented as `token` (reference or JWT), with its family: what a
    /// bearer-authenticated endpoint acts on. Found by the hash of the whole token, so a JWT's
    /// signature is bound by the lookup itself.
    public func liveAccessToken(realm: String, token: String) async throws -> TokenTables.AccessToken? {
        if let found = try await tokens.accessToken(hash: OpaqueToken.hash(token), realm: realm, now: now()) { return found }
        guard let legacy = await legacyAccessHash(of: token, realm: realm) else { return nil }
        return try await tokens.accessToken(hash: legacy, realm: realm, now: now())
    }

    /// The family of an access token, by the same rule as `liveAccessToken`.
    func familyOfAccessToken(_ token: String, realm: String) async throws -> UUID? {
        if let found = try await tokens.familyOfAccessToken(hash: OpaqueToken.hash(token), realm: realm) { return found }
        guard let legacy = await legacyAccessHash(of: token, realm: realm) else { return nil }
        return try await tokens.familyOfAccessToken(hash: legacy, realm: realm)
    }

    /// JWT access tokens minted before issue 44 were recorded by the hash of their jti. Such a
    /// token is looked up by it only when its signature verifies with one of the realm's keys
    /// (a rolling upgrade's tokens live one access lifetime; afterwards nothing matches).
    private func legacyAccessHash(of token: String, realm: String) async -> String? {
        guard token.utf8.count <= 8192, token.split(separator: ".", omittingEmptySubsequences: false).count == 3,
            let jti = await keys.verifiedJTI(of: token, realm: realm)
        else { return nil }
        return OpaqueToken.hash(jti)
    }
}
