import EventSourcing
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
    let tokens: TokenService
    let passkeys: PasskeyService
    /// Personal data keys; nil in tools started without the master key (erasure refuses).
    let vault: PersonalDataVault?
    /// Read by `UsersTable`, `SubjectKeysTable` and `MailOutboxTable`.
    let pool: PQPool
    let notifier: SettingsNotifier
    let now: @Sendable () -> Date

    /// What an erasure did.
    public struct Outcome: Sendable, Equatable {
        public var userID: UUID?
        /// False when the user was erased before (nothing more to do but the idempotent steps).
        public var erasedNow: Bool
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
            let result = try await actor.execute(.erase(newStamp: OpaqueToken.generate().hash), now: now(), metadata: metadata)
            outcome.erasedNow = !result.events.isEmpty
            outcome.familiesRevoked = try await revokeFamilies(realm: realm, userID: userID, metadata: metadata)
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

    private func revokeFamilies(realm: String, userID: UUID, metadata: EventMetadata) async throws -> Int {
        let families = try await tokens.tokens.liveFamilies(realm: realm, userID: userID)
        var revoked = 0
        for family in families {
            let result = try await familyActors.actor(for: StreamNames.tokenFamily(realm: realm, familyID: family))
                .execute(.revoke(.erased), now: now(), metadata: metadata)
            revoked += result.events.isEmpty ? 0 : 1
        }
        return revoked
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
