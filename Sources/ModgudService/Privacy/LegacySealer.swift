import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one-time rewrite of events written before personal data was sealed (issue 13, item 5):
/// `modgud privacy seal-legacy`.
///
/// Rewriting an immutable log is the exception this position allows (EventStoreDB's
/// scavenging and Marten's event archiving take it for retention): a legal duty to make data
/// unreadable outranks byte-for-byte immutability. What the rewrite keeps is what readers
/// rely on: every event's position, stream version, type, time and every non-personal field.
///
/// - `user.registered`, `user.profile_changed`: the address and names sealed under the user's
///   key; the address's blind index stored beside the key.
/// - `challenge.issued`: a login code or link loses its address and names (the user id is
///   there); a registration code still live gets a registrant whose key seals them; an
///   expired one loses them.
/// - `passkey.enrolled`, `passkey.renamed`: the passkey's name sealed under its owner's key
///   (issue 22; migration 0011 counts such events as legacy).
/// - Metadata: a plaintext client IP is sealed under its day's key, or dropped when that day
///   is past the retention.
/// - Code streams named by the unkeyed hash of realm and address (`code.<32 hex>`) get a
///   random name: nothing then links them to an address. Their versions do not change.
///
/// Guarded: it takes an advisory lock (a second run waits for nothing: it is refused), writes
/// an event only if it is still as read, and checks each sealed value opens to the original
/// before writing. Idempotent: sealed values are left alone, so a second run changes nothing.
/// Afterwards the users and passkeys read models are rebuilt, so no plaintext is left there either.
public struct LegacySealer: Sendable {
    /// The log it rewrites, its lock and the read models it rebuilds.
    let pool: PQPool
    /// Personal data keys; nil in tools started without the master key (a run refuses).
    let vault: PersonalDataVault?
    let users: AggregateRegistry<User>
    let challenges: AggregateRegistry<EmailChallenge>
    let notifier: SettingsNotifier
    let now: @Sendable () -> Date
    let addressRetention: TimeInterval
    let batchSize: Int

    /// The same sealer with another retention of client IPs.
    public func with(addressRetention: TimeInterval) -> LegacySealer {
        LegacySealer(
            pool: pool, vault: vault, users: users, challenges: challenges, notifier: notifier, now: now, addressRetention: addressRetention,
            batchSize: batchSize)
    }

    /// What a run did (or, dry, would do).
    public struct Report: Sendable, Equatable {
        public var eventsScanned = 0
        public var eventsRewritten = 0
        public var addressesSealed = 0
        public var addressesDropped = 0
        public var streamsRenamed = 0
    }

    /// Another run holds the lock.
    public struct AlreadyRunning: Error, CustomStringConvertible {
        public var description: String { "another seal-legacy run holds the lock" }
    }


    /// Rewrites (or with `dryRun`, counts) every legacy event, then rebuilds the users read model.
    public func run(dryRun: Bool) async throws -> Report {
        guard let vault else { throw MasterKeyMissing() }
        return try await pool.withConnection { lock in
            guard try await PersonalDataSealingTable.tryLock(on: lock) else {
                throw AlreadyRunning()
            }
            do {
                var report = Report()
                try await rewriteEvents(vault: vault, dryRun: dryRun, report: &report)
                try await renameCodeStreams(dryRun: dryRun, report: &report)
                if !dryRun {
                    try await PersonalDataSealingTable.markSealed(pool: pool)
                    for name in [UserDirectoryProjection().name, PasskeyDirectoryProjection().name] {
                        guard let directory = ProjectionCatalog.named(name) else { continue }
                        _ = try await ProjectionRebuilder(pool: pool).rebuild(directory)
                    }
                    notifier.invalidateLocally(nil)
                    await users.forgetAll()
                    await challenges.forgetAll()
                }
                try await PersonalDataSealingTable.unlock(on: lock)
                return report
            } catch {
                try? await PersonalDataSealingTable.unlock(on: lock)
                throw error
            }
        }
    }

    /// Whether events written before sealing may remain (set by migration 0009, cleared by a run).
    public static func pending(pool: PQPool) async throws -> Bool {
        try await PersonalDataSealingTable.pending(pool: pool)
    }

    private func rewriteEvents(vault: PersonalDataVault, dryRun: Bool, report: inout Report) async throws {
        let log = EventLogMaintenance(pool: pool)
        var after: Int64 = 0
        while true {
            let events = try await log.events(afterPosition: after, limit: batchSize)
            guard let last = events.last else { return }
            after = last.position
            var rewrites: [EventLogMaintenance.Rewrite] = []
            for event in events {
                report.eventsScanned += 1
                guard let rewritten = try await rewrite(event, vault: vault, dryRun: dryRun, report: &report) else { continue }
                report.eventsRewritten += 1
                rewrites.append(EventLogMaintenance.Rewrite(event: event, payload: rewritten.payload, metadata: rewritten.metadata))
            }
            if !dryRun { try await log.apply(rewrites) }
        }
    }

    typealias LegacyEvent = EventLogMaintenance.RawEvent

    /// The event's new payload and metadata, or nil when it holds nothing plain.
    private func rewrite(_ event: LegacyEvent, vault: PersonalDataVault, dryRun: Bool, report: inout Report) async throws
        -> (payload: String, metadata: String)?
    {
        guard var payload = try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any],
            var metadata = try JSONSerialization.jsonObject(with: Data(event.metadata.utf8)) as? [String: Any]
        else { return nil }
        var changed = false
        let names = ["username", "firstName", "lastName"]
        func plain(_ key: String) -> String? {
            guard let text = payload[key] as? String, SealedText(stored: text) == nil else { return nil }
            return text
        }
        func seal(_ keys: [String], subject: String, index: String? = nil) async throws {
            for key in keys {
                guard let text = plain(key) else { continue }
                changed = true
                guard !dryRun else { continue }
                let sealed = try await vault.seal(text, subject: subject, realm: event.realm)
                guard try await vault.open(sealed) == text else { throw SealingCheckFailed(position: event.position) }
                payload[key] = sealed.stored
            }
            if let index, changed, !dryRun {
                try await SubjectKeysTable.setEmailIndexIfMissing(index, subject: subject, pool: pool)
            }
        }
        switch event.type {
        case UserRegistered.eventType:
            guard let userID = (payload["userID"] as? String).flatMap(UUID.init(uuidString:)) else { break }
            let index = plain("email").flatMap(EmailAddress.init).map { vault.blindIndex($0.value, realm: event.realm) }
            try await seal(["email"] + names, subject: PersonalDataVault.userSubject(userID), index: index)
        case UserProfileChanged.eventType:
            guard let userID = UUID(uuidString: String(event.streamID.dropFirst(User.streamType.count + 1))) else { break }
            try await seal(names, subject: PersonalDataVault.userSubject(userID))
        case PasskeyEnrolled.eventType:
            guard let userID = (payload["userID"] as? String).flatMap(UUID.init(uuidString:)) else { break }
            try await seal(["displayName"], subject: PersonalDataVault.userSubject(userID))
        case PasskeyRenamed.eventType:
            guard plain("displayName") != nil, let userID = try await passkeyOwner(stream: event.streamID) else { break }
            try await seal(["displayName"], subject: PersonalDataVault.userSubject(userID))
        case ChallengeIssued.eventType:
            guard let address = plain("email") else { break }
            if Self.isLiveRegistrationCode(payload, now: now()), let email = EmailAddress(address) {
                let registrant = UUID()
                payload["registrantID"] = registrant.uuidString
                try await seal(["email"] + names, subject: PersonalDataVault.userSubject(registrant), index: vault.blindIndex(email.value, realm: event.realm))
            } else {
                for key in ["email"] + names { payload[key] = nil }
                changed = true
            }
        default:
            break
        }
        if try await sealClientIP(&metadata, event: event, vault: vault, dryRun: dryRun, report: &report) { changed = true }
        guard changed else { return nil }
        return (try Self.encoded(payload), try Self.encoded(metadata))
    }

    private static func encoded(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Whether a legacy `challenge.issued` payload is a registration code still live at `now`.
    private static func isLiveRegistrationCode(_ payload: [String: Any], now: Date) -> Bool {
        let expires = (payload["expiresAt"] as? Double).map { Date(timeIntervalSinceReferenceDate: $0) }
            ?? (payload["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) }
        return payload["purpose"] as? String == ChallengePurpose.registrationCode.rawValue && (expires ?? .distantPast) > now
    }

    /// A plaintext client IP in the metadata sealed under its day's key, or dropped when that
    /// day is past the retention. Returns whether the metadata changed.
    private func sealClientIP(_ metadata: inout [String: Any], event: LegacyEvent, vault: PersonalDataVault, dryRun: Bool, report: inout Report)
        async throws -> Bool
    {
        guard let address = metadata["clientIP"] as? String, SealedText(stored: address) == nil else { return false }
        if event.recordedAt < now().addingTimeInterval(-addressRetention) {
            metadata["clientIP"] = nil
            report.addressesDropped += 1
        } else {
            report.addressesSealed += 1
            if !dryRun {
                metadata["clientIP"] = try await vault.seal(address, subject: PersonalDataVault.addressSubject(event.recordedAt), realm: "*").stored
            }
        }
        return true
    }

    /// The owner of a passkey stream, from its `passkey.enrolled` event (a user id, never personal).
    private func passkeyOwner(stream: String) async throws -> UUID? {
        try await EventLogMaintenance(pool: pool).firstPayloadField("userID", stream: stream, type: PasskeyEnrolled.eventType)
            .flatMap(UUID.init(uuidString:))
    }

    /// A sealed value did not open to the original: nothing of that batch is written.
    public struct SealingCheckFailed: Error, CustomStringConvertible {
        public var position: Int64
        public var description: String { "sealing the event at position \(position) did not round-trip; nothing of its batch was written" }
    }

    /// Code streams named by the old unkeyed hash get a random name (same events, same versions).
    private func renameCodeStreams(dryRun: Bool, report: inout Report) async throws {
        let prefix = EmailChallenge.streamType + "-code."
        let log = EventLogMaintenance(pool: pool)
        let legacy = try await log.streamIDs(matching: "^" + prefix.replacingOccurrences(of: ".", with: "\\.") + "[0-9a-f]{32}$")
        report.streamsRenamed = legacy.count
        guard !dryRun else { return }
        for old in legacy {
            let new = prefix + "legacy-" + UUID().uuidString.lowercased()
            try await log.renameStream(old, to: new)
        }
    }
}
