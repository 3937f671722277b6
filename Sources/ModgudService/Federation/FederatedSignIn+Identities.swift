import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// A person's linked provider accounts (issue 48): what `GET /connect/identities` and My
/// Account list, what they and the console unlink, and what a provider's revocation ends.
extension FederatedSignIn {
    /// A provider account linked to a user: the realm's provider id and when it was linked.
    public struct LinkedIdentity: Sendable, Equatable {
        public var provider: String
        public var linkedAt: Date
    }

    /// The user's linked provider accounts, oldest first.
    public func identities(realm: String, userID: UUID) async throws -> [LinkedIdentity] {
        try await Self.identities(realm: realm, userID: userID, pool: pool)
    }

    static func identities(realm: String, userID: UUID, pool: PQPool) async throws -> [LinkedIdentity] {
        try await FederatedIdentitiesTable.links(realm: realm, userID: userID, pool: pool).map { LinkedIdentity(provider: $0.provider, linkedAt: $0.linkedAt) }
    }

    /// Unlinks the user's account at `provider` (`user.identity_unlinked` with `reason`, and the
    /// lookup row in the same transaction): false when none is linked. The user keeps every
    /// other way in (an email code always reaches the account's address); the sessions it
    /// started stay unless `endingSessions` (a provider's revocation ends them).
    @discardableResult
    public func unlink(realm: String, userID: UUID, provider: String, reason: String, endingSessions: Bool = false, metadata: EventMetadata)
        async throws -> Bool
    {
        let unlinked = try await Self.unlink(
            users: users, realm: realm, userID: userID, provider: provider, reason: reason, metadata: metadata, now: now())
        if endingSessions { try await endSessions(realm: realm, userID: userID, provider: provider, metadata: metadata) }
        return unlinked
    }

    /// `user.identity_unlinked` and the lookup row's delete in one transaction (the person, an
    /// operator, a provider's revocation alike): false when none was linked.
    static func unlink(
        users: AggregateRegistry<User>, realm: String, userID: UUID, provider: String, reason: String, metadata: EventMetadata, now: Date
    ) async throws -> Bool {
        let actor = await users.actor(for: StreamNames.user(realm: realm, userID: userID))
        let delete = FederatedIdentitiesTable.delete(realm: realm, userID: userID, provider: provider)
        let outcome = try await actor.execute(.unlinkIdentity(provider: provider, reason: reason), now: now, metadata: metadata, extra: { events in
            events.isEmpty ? [] : [delete]
        })
        return !outcome.events.isEmpty
    }

    /// Ends the user's live sessions signed in with `provider` (`token_family.revoked`, reason
    /// `provider_revoked`); the user's other sessions stay.
    func endSessions(realm: String, userID: UUID, provider: String, metadata: EventMetadata) async throws {
        for session in try await TokenTables(pool: pool).sessions(realm: realm, userID: userID).filter(\.live) {
            let family = await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: session.familyID))
            guard let started = try await family.current().state.started, started.userID == userID, started.federation == provider else { continue }
            _ = try await family.execute(.revoke(.providerRevoked), now: now(), metadata: metadata)
        }
    }

    /// The user a provider account is linked to, by its `sub` (Apple's notifications name it).
    public func linkedUser(realm: String, provider: String, subject: String) async throws -> UUID? {
        try await FederatedIdentitiesTable.user(
            realm: realm, provider: provider, subjectIndex: subjectIndex(provider: provider, subject: subject, realm: realm), pool: pool)
    }

    /// The blind index a provider account is found by: the provider's `sub` never stored plain.
    func subjectIndex(provider: String, subject: String, realm: String) -> String {
        vault.blindIndex("federated\u{0}\(provider)\u{0}\(subject)", realm: realm)
    }
}
