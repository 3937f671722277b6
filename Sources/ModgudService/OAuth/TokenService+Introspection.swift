import EventSourcing
import Foundation
import ModgudDomain

/// What a presented token is (RFC 7662 introspection, the bearer lookups of the protected
/// endpoints) and its revocation (RFC 7009, code reuse, a device's sign-out).
extension TokenService {
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

    /// RFC 7009: revokes the family of a refresh or access token the client owns; a device
    /// secret (Native SSO) ends its device session, every app's sign-in in it. Unknown tokens
    /// and other clients' tokens are ignored (the endpoint answers 200 either way).
    public func revoke(client: AuthenticatedClient, token: String, metadata: EventMetadata) async throws {
        let familyID: UUID?
        if let refresh = try await tokens.refreshToken(hash: OpaqueToken.hash(token), realm: client.realm) {
            familyID = refresh.familyID
        } else {
            familyID = try await familyOfAccessToken(token, realm: client.realm)
        }
        guard let familyID else {
            _ = try await endDeviceSession(client: client, token: token, metadata: metadata)
            return
        }
        let family = await families.actor(for: StreamNames.tokenFamily(realm: client.realm, familyID: familyID))
        guard try await family.current().state.started?.clientID == client.id else { return }
        _ = try await family.execute(.revoke(.logout), now: now(), metadata: metadata)
    }

    /// Revokes the family an authorization code handed over, when the code is presented again
    /// (RFC 9700 section 4.2.4). A family revoked already stays as it is.
    public func revokeForCodeReuse(realm: String, familyID: UUID, metadata: EventMetadata) async throws {
        _ = try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID)).execute(.revoke(.codeReuse), now: now(), metadata: metadata)
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
    private func familyOfAccessToken(_ token: String, realm: String) async throws -> UUID? {
        if let found = try await tokens.familyOfAccessToken(hash: OpaqueToken.hash(token), realm: realm) { return found }
        guard let legacy = await legacyAccessHash(of: token, realm: realm) else { return nil }
        return try await tokens.familyOfAccessToken(hash: legacy, realm: realm)
    }

    /// JWT access tokens minted before issue 44 were recorded by the hash of their jti. Such a
    /// token is looked up by it only when its signature verifies with one of the realm's keys
    /// (a rolling upgrade's tokens live one access lifetime; afterwards nothing matches).
    private func legacyAccessHash(of token: String, realm: String) async -> String? {
        guard token.utf8.count <= 8192, token.split(separator: ".", omittingEmptySubsequences: false).count == 3,
            let jti = await minter.keys.verifiedJTI(of: token, realm: realm)
        else { return nil }
        return OpaqueToken.hash(jti)
    }
}
