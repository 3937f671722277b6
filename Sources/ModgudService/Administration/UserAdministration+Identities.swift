import EventSourcing
import Foundation
import ModgudDomain

/// A person's linked provider accounts as an operator sees and ends them (issue 48): the
/// console's user page lists them; unlinking is the same event the person's own unlink writes,
/// with the operator as actor and `operator` as the reason.
extension UserAdministration {
    /// The user's linked provider accounts, oldest first.
    public func identities(realm: String, userID: UUID) async throws -> [FederatedSignIn.LinkedIdentity] {
        try await ServiceRefusal.translating {
            try await FederatedSignIn.identities(realm: realm, userID: userID, pool: pool)
        }
    }

    /// Unlinks the user's account at `provider`: false when none is linked.
    @discardableResult
    public func unlinkIdentity(realm: String, userID: UUID, provider: String, metadata: EventMetadata) async throws -> Bool {
        try await ServiceRefusal.translating {
            try await FederatedSignIn.unlink(users: users, realm: realm, userID: userID, provider: provider, reason: "operator", metadata: metadata, now: now())
        }
    }
}
