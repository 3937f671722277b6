import EventSourcing
import Foundation
import ModgudDomain

/// Ending sign-ins (issue 68, out of `TokenService`): RFC 7009 revocation, a reused
/// authorization code's family, and a person's own sessions (issue 46: what
/// `GET /connect/sessions` lists and `DELETE /connect/sessions/{id}` ends).
public struct TokenRevocation: Sendable {
    let families: AggregateRegistry<TokenFamily>
    let tokens: TokenTables
    let introspection: TokenIntrospection
    let deviceSessions: NativeSSOService
    let now: @Sendable () -> Date

    /// RFC 7009: revokes the family of a refresh or access token the client owns; a device
    /// secret (Native SSO) ends its device session, every app's sign-in in it. Unknown tokens
    /// and other clients' tokens are ignored (the endpoint answers 200 either way).
    public func revoke(client: AuthenticatedClient, token: String, metadata: EventMetadata) async throws {
        let familyID: UUID?
        if let refresh = try await tokens.refreshToken(hash: OpaqueToken.hash(token), realm: client.realm) {
            familyID = refresh.familyID
        } else {
            familyID = try await introspection.familyOfAccessToken(token, realm: client.realm)
        }
        guard let familyID else {
            _ = try await deviceSessions.endDeviceSession(client: client, token: token, metadata: metadata)
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

    /// The person's live sessions, newest first (at most 50).
    public func liveSessions(realm: String, userID: UUID) async throws -> [TokenTables.Session] {
        try await tokens.sessions(realm: realm, userID: userID).filter(\.live)
    }

    /// Ends one of the person's own sessions (`token_family.revoked`, reason `logout`): false
    /// when the person has no such session (another person's id is unknown alike).
    public func endSession(realm: String, userID: UUID, familyID: UUID, metadata: EventMetadata) async throws -> Bool {
        let family = await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID))
        guard let started = try await family.current().state.started, started.userID == userID else { return false }
        _ = try await family.execute(.revoke(.logout), now: now(), metadata: metadata)
        return true
    }
}
