import EventSourcing
import Foundation
import ModgudDomain

/// A person's own sessions (issue 46): what `GET /connect/sessions` lists and
/// `DELETE /connect/sessions/{id}` ends. A recovery session may use both.
extension TokenService {
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
