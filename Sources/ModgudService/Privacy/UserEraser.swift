import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Erases a person (issue 13, GDPR Article 17): what `modgud user erase` and
/// `DELETE /admin/api/realms/{r}/users/{u}?erase=true` do.
///
/// In this order, each step safe to run again (erasing twice is harmless, and an erasure cut
/// short by a crash is finished by running it again):
/// 1. `user.erased` and a new security stamp on the user's stream: every token dies at once
///    (the read model's tombstone frees the address for a new sign-up);
/// 2. every live token family revoked (reason `erased`) and every passkey deleted, so the
///    audit shows why each ended;
/// 3. the user's data key shredded, with the key of every registration still pending for the
///    address: every sealed copy of the address and names, in events, read models and
///    backups whose copy of `subject_keys` expired, is unreadable;
/// 4. mail still queued for the address deleted from the outbox.
///
/// Step 2 also deletes the user's recovery codes (issue 46).
public struct UserEraser: Sendable {
    let users: AggregateRegistry<User>
    let familyActors: AggregateRegistry<TokenFamily>
    let tokenTables: TokenTables
    let passkeys: PasskeyService
    /// Personal data keys; nil in tools started without the master key (erasure refuses).
    let vault: PersonalDataVault?
    /// Read by `UsersTable`, `SubjectKeysTable` and `MailOutboxTable`.
    let pool: PQPool
    /// The log: where an erasure reads when its stamp and its families' ends were recorded.
    let store: PostgresEventStore
    let notifier: SettingsNotifier
    let now: @Sendable () -> Date
    /// A seam for tests: runs after step 1's events, before step 2 (`UserEraserTests` refreshes
    /// a session there, as a concurrent refresh on another instance may).
    var betweenStampAndRevocations: (@Sendable () async throws -> Void)? = nil

    /// What an erasure did.
    public struct Outcome: Sendable, Equatable {
        public var userID: UUID?
        /// False when the user was erased before (nothing more to do but the idempotent steps).
        public var erasedNow: Bool
        /// The user's token families this erasure ended: those not revoked when it began (a
        /// family a stamp change left unrevoked counts as live, as it always did) and started
        /// before its `user.erased` event, whose end is either its own revocation (reason
        /// `erased`) or a refresh's (reason `stamp`) recorded in the log after the `user.erased`
        /// event, that is, a refresh that found the user erased and ended the family before the
        /// erasure's revocation reached it. A family ended for another reason meanwhile (a
        /// logout, a reuse, another erasure's revocation, a refresh's `stamp` revocation before
        /// the `user.erased` event) is not counted; neither is one started after that event
        /// (dead at birth). Decided by the log's positions, not by timing: the same figure
        /// whatever a concurrent refresh does (issue 67).
        public var familiesRevoked: Int
        public var passkeysDeleted: Int
        /// Keys deleted: the user's and any pending registration's.
        public var keysShredded: Int
        public var mailDeleted: Int
    }

    /// Erases the user named by `key` (a user id, or an address: then also the address's
    /// pending registrations, even when it has no account).
    /// - Throws: `DomainError` `User.NotFound` when neither a user nor a pending registration
    ///   matches; `User.LegacyPlaintext` when the user's events predate sealing (run
    ///   `modgud privacy seal-legacy` first: plaintext cannot be shredded).
    public func erase(realm: String, _ key: String, metadata: EventMetadata) async throws -> Outcome {
        guard let vault else { throw MasterKeyMissing() }
        var userID = UUID(uuidString: key)
        var address = EmailAddress(key)
        if userID == nil, let address {
            userID = try await UsersTable.userID(
                realm: realm, email: address, index: vault.blindIndex(address.value, realm: realm), pool: pool, including: ["deleted"])
        }
        var keptIndex: String?
        var erasedSubjects: [String] = []
        var outcome = Outcome(userID: userID, erasedNow: false, familiesRevoked: 0, passkeysDeleted: 0, keysShredded: 0, mailDeleted: 0)
        if let userID {
            let (actor, state) = try await sealedUser(realm: realm, userID: userID)
            // The address is needed once more, to find its pending registrations and its mail.
            if address == nil, let opened = try await vault.open(state.email) { address = EmailAddress(opened) }
            keptIndex = try await SubjectKeysTable.emailIndex(subject: PersonalDataVault.userSubject(userID), pool: pool)
            let before = try await liveFamilyVersions(realm: realm, userID: userID)
            let result = try await actor.execute(.erase(newStamp: OpaqueToken.generate().hash), now: now(), metadata: metadata)
            outcome.erasedNow = !result.events.isEmpty
            let erasedAt = try await erasedPosition(actor.stream, version: result.version, appended: result.events.count)
            try await betweenStampAndRevocations?()
            let revoked = try await revokeFamilies(realm: realm, userID: userID, metadata: metadata)
            outcome.familiesRevoked = try await familiesEnded(
                realm: realm, userID: userID, before: before, revoked: revoked, erasedAt: erasedAt)
            outcome.passkeysDeleted = try await deletePasskeys(realm: realm, userID: userID, metadata: metadata)
            // Issue 46: the recovery codes' hashes go (the erased state names no set any more).
            _ = try await pool.query(RecoveryCodesTable.removeAll(realm: realm, userID: userID))
            // Issue 48: the provider accounts' links go (their subjects were sealed under the key shredded next).
            _ = try await pool.query(FederatedIdentitiesTable.deleteAll(realm: realm, userID: userID))
            let subject = PersonalDataVault.userSubject(userID)
            if try await vault.shred(subject: subject, realm: realm) { outcome.keysShredded += 1 }
            await notifier.changed(.subject(subject))
            erasedSubjects.append(subject)
        }
        // The address's index: from the address, or from beside the user's key (a re-run by id
        // after a crash: the erased state no longer holds the address, the key still does).
        if let index = address.map({ vault.blindIndex($0.value, realm: realm) }) ?? keptIndex {
            for subject in try await vault.shred(emailIndex: index, realm: realm) {
                outcome.keysShredded += 1
                await notifier.changed(.subject(subject))
                erasedSubjects.append(subject)
            }
        }
        // Queued mail is sealed under the person's keys (unreadable now) and named by subject:
        // it goes with them. (Rows queued before migration 0011 name no subject; a dispatcher
        // sends those within seconds, so none is left to match.)
        for subject in erasedSubjects {
            outcome.mailDeleted += try await MailOutboxTable.delete(realm: realm, subject: subject, pool: pool)
        }
        guard userID != nil || outcome.keysShredded > 0 || outcome.mailDeleted > 0 else {
            throw DomainError.notFound("User.NotFound", "No such user.")
        }
        return outcome
    }

    /// The user's actor and state, refused when the user does not exist or holds legacy
    /// plaintext (which cannot be shredded).
    private func sealedUser(realm: String, userID: UUID) async throws -> (AggregateActor<User>, User.State) {
        let stream = StreamNames.user(realm: realm, userID: userID)
        var actor = await users.actor(for: stream)
        var state = try await actor.current().state
        if case .plain = state.email {
            // Held from before `seal-legacy` rewrote the log in place? Read it again.
            await users.forget(stream.id)
            actor = await users.actor(for: stream)
            state = try await actor.current().state
        }
        guard state.exists else { throw DomainError.notFound("User.NotFound", "No such user.") }
        if case .plain = state.email {
            throw DomainError.conflict("User.LegacyPlaintext", "This user's events predate sealing: run `modgud privacy seal-legacy` first.")
        }
        return (actor, state)
    }

    /// The user's families not revoked before the erasure, each with its stream's version
    /// then (every family the read model knows, revoked or not, is in the answer: a family
    /// missing from it started later). Read from each family's stream, not the read model.
    private func liveFamilyVersions(realm: String, userID: UUID) async throws -> (known: Set<UUID>, live: [UUID: Int64]) {
        let families = try await tokenTables.familiesRevoked(realm: realm, userID: userID)
        var live: [UUID: Int64] = [:]
        for (family, revoked) in families where !revoked {
            let (state, version) = try await familyActors.actor(for: StreamNames.tokenFamily(realm: realm, familyID: family)).current()
            if state.exists && state.revoked == nil { live[family] = version }
        }
        return (Set(families.keys), live)
    }

    /// The log position of the user's `user.erased` event: the one just appended, or, when
    /// the user was erased before, the earlier one.
    private func erasedPosition(_ stream: StreamRef, version: Int64, appended: Int) async throws -> Int64 {
        let after = appended > 0 ? version - Int64(appended) : 0
        guard let erased = try await store.readStream(stream.id, after: after).first(where: { $0.type == UserErased.eventType }) else {
            throw DomainError.conflict("User.NotErased", "The user's stream holds no user.erased event.")
        }
        return erased.position
    }

    /// Revokes every family still live (reason `erased`); the ones this revocation ended.
    private func revokeFamilies(realm: String, userID: UUID, metadata: EventMetadata) async throws -> Set<UUID> {
        var revoked: Set<UUID> = []
        for family in try await tokenTables.liveFamilies(realm: realm, userID: userID) {
            let result = try await familyActors.actor(for: StreamNames.tokenFamily(realm: realm, familyID: family))
                .execute(.revoke(.erased), now: now(), metadata: metadata)
            if !result.events.isEmpty { revoked.insert(family) }
        }
        return revoked
    }

    /// How many families the erasure ended (`Outcome.familiesRevoked` says which): read from
    /// the families' streams after the erasure's revocations.
    private func familiesEnded(
        realm: String, userID: UUID, before: (known: Set<UUID>, live: [UUID: Int64]), revoked: Set<UUID>, erasedAt: Int64
    ) async throws -> Int {
        // Families started after the look before (a sign-in racing the erasure) are read from
        // their start: counted only when that was before the `user.erased` event.
        let started = try await tokenTables.families(realm: realm, userID: userID).keys.filter { !before.known.contains($0) }
        var candidates = before.live
        for family in started where candidates[family] == nil { candidates[family] = 0 }
        var ended = 0
        for (family, version) in candidates {
            let isNew = before.live[family] == nil
            if revoked.contains(family) && !isNew {
                ended += 1
                continue
            }
            let events = try await store.readStream(StreamNames.tokenFamily(realm: realm, familyID: family).id, after: version)
            if isNew, events.first(where: { $0.type == TokenFamilyStarted.eventType }).map({ $0.position < erasedAt }) != true { continue }
            if revoked.contains(family) {
                ended += 1
                continue
            }
            for recorded in events {
                guard case .revoked(let revocation) = try TokenFamilyEvent(decoding: recorded.envelope, registry: ModgudEvents.registry) else { continue }
                if revocation.reason == .stamp && recorded.position > erasedAt { ended += 1 }
                break
            }
        }
        return ended
    }

    private func deletePasskeys(realm: String, userID: UUID, metadata: EventMetadata) async throws -> Int {
        var deleted = 0
        for passkey in try await passkeys.list(realm: realm, userID: userID)
        where try await passkeys.delete(realm: realm, userID: userID, passkeyID: passkey.id, by: "erasure", metadata: metadata) {
            deleted += 1
        }
        return deleted
    }
}
