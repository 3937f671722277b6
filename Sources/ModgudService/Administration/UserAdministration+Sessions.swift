import EventSourcing
import Foundation
import ModgudDomain

/// A user's sessions and roles, for operators (issue 31): the console and the admin API.
extension UserAdministration {
    /// A user's sessions (token families), live ones first.
    public func sessions(realm: String, userID: UUID) async throws -> [TokenTables.Session] {
        try await ServiceRefusal.translating {
            try await tokenTables.sessions(realm: realm, userID: userID)
        }
    }

    /// Ends one session of a user: its refresh token is refused from now on, and its access
    /// tokens stop being live (introspection, userinfo). False when the user has no such session.
    public func revokeSession(realm: String, userID: UUID, familyID: UUID, metadata: EventMetadata) async throws -> Bool {
        return try await ServiceRefusal.translating {
            guard try await tokenTables.families(realm: realm, userID: userID)[familyID] != nil else { return false }
            _ = try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID))
                .execute(.revoke(.admin), now: now(), metadata: metadata)
            return true
        }
    }

    /// Grants or takes away a role (`operator` admits the user to the operator console when
    /// the user is in the console's realm).
    public func setRole(_ role: String, granted: Bool, realm: String, userID: UUID, metadata: EventMetadata) async throws -> User.State {
        return try await ServiceRefusal.translating {
            try await users.actor(for: StreamNames.user(realm: realm, userID: userID))
                .execute(.setRole(role, granted: granted), now: now(), metadata: metadata).state
        }
    }
}
