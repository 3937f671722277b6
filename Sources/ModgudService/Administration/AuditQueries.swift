import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The log as operators and auditors read it: a user's history, a client's or a realm's, and
/// the audit log's signed checkpoints and proofs (`AuditQueries+Log.swift`).
public struct AuditQueries: Sendable {
    /// Read by `EventLogMaintenance` and `AuditLogReader`.
    let pool: PQPool
    let tokenTables: TokenTables
    let users: AggregateRegistry<User>
    /// Personal data keys; nil in tools started without the master key.
    let vault: PersonalDataVault?
    let auditKeys: AuditLogKeys

    /// One line of a user's history.
    public struct Entry: Sendable {
        /// The event's position in the log.
        public var position: Int64 = 0
        public var recordedAt: Date
        public var event: String
        public var detail: String
        public var actor: String?
        public var client: String?
        public var clientIP: String?
        /// The request's user agent, when the event came from one.
        public var userAgent: String? = nil
    }

    /// A user's history from the log, in log order: their own stream, their token families,
    /// their passkeys, their sign-in challenges (codes, links and confirmations issued to
    /// them, with every wrong attempt and burn: issue 43, "why can't this user sign in?"), and
    /// the rate limits their address tripped.
    /// A code sent to an address without an account names no user and is in no one's history.
    /// Which part of a history to read (the console's filters and pages).
    public struct Window: Sendable, Equatable {
        /// Only these event types (nil: every type).
        public var types: [String]?
        /// Only events recorded at or after this time.
        public var since: Date?
        /// Only events positioned before this one (the keyset of the next page, newest first).
        public var before: Int64?
        /// The newest `limit` of what matches (nil: all).
        public var limit: Int?

        public init(types: [String]? = nil, since: Date? = nil, before: Int64? = nil, limit: Int? = nil) {
            (self.types, self.since, self.before, self.limit) = (types, since, before, limit)
        }

        public static let all = Window()
    }

    public func userHistory(realm: String, userID: UUID, window: Window = .all) async throws -> [Entry] {
        return try await ServiceRefusal.translating {
            // Their own stream, their token families' (with the client of each), and their
            // passkeys', deleted ones included (an operator command: a scan of the realm's
            // passkey enrollments is acceptable here).
            let families = try await tokenTables.families(realm: realm, userID: userID)
            var clientOfStream: [String: String] = [:]
            for (family, client) in families { clientOfStream[StreamNames.tokenFamily(realm: realm, familyID: family).id] = client }
            let log = EventLogMaintenance(pool: pool)
            let user = userID.uuidString.lowercased()
            let passkeyStreams = try await log.streams(realm: realm, withEventOfType: PasskeyEnrolled.eventType, payloadKey: "userID", equalTo: user)
            let challengeStreams = try await log.streams(realm: realm, withEventOfType: ChallengeIssued.eventType, payloadKey: "userID", equalTo: user)
            let throttleStreams = try await log.streams(realm: realm, withEventOfType: RateLimitTripped.eventType, payloadKey: "userID", equalTo: user)
            let streams = [StreamNames.user(realm: realm, userID: userID).id, StreamNames.operatorLog(realm: realm, userID: userID).id]
                + clientOfStream.keys.sorted() + passkeyStreams + challengeStreams + throttleStreams
            let events =
                window == .all
                ? try await log.events(realm: realm, streams: streams)
                : try await log.newestEvents(
                    realm: realm, streams: streams, types: window.types, since: window.since, before: window.before, limit: window.limit
                ).reversed()
            // An erased person's data reads `[erased]`: their address in the registration, and
            // their client IPs (whose day keys outlive them: the audit does not).
            let erased = try await users.actor(for: StreamNames.user(realm: realm, userID: userID)).current().state.status == .erased
            var entries: [Entry] = []
            for event in events {
                let payload = Self.fields(event.payload)
                let metadata = Self.fields(event.metadata)
                var details: [String] = []
                if let grant = payload["grantType"] { details.append("grant=\(grant)") }
                if let generation = payload["generation"] { details.append("generation=\(generation)") }
                if let reason = payload["reason"] { details.append("reason=\(reason)") }
                if let purpose = payload["purpose"] { details.append("purpose=\(purpose)") }
                if let because = payload["revokedBecause"] { details.append("revoked=\(because)") }
                if let policy = payload["policy"] { details.append("policy=\(policy)") }
                if let attempts = payload["attempts"] { details.append("attempts=\(attempts)") }
                if let action = payload["action"], let target = payload["target"] { details.append("\(action) \(target)") }
                if let stored = payload["storedSignCount"], let received = payload["receivedSignCount"] {
                    details.append("sign_count stored=\(stored) received=\(received)")
                }
                if event.type == UserRegistered.eventType, let email = payload["email"].map(PersonalText.init(stored:)) {
                    let opened = erased ? nil : try await vault?.open(email)
                    details.append("email=\(opened ?? (erased || vault != nil ? SealedFieldRenderer.erased : "[sealed]"))")
                }
                // Sealed addresses open while their day key lives (docs/operations/retention.md, "Client IPs").
                let stored = metadata["clientIP"]
                let address = erased ? stored.map { _ in SealedFieldRenderer.erased } : try await vault.openForTheDay(stored)
                entries.append(
                    Entry(
                        position: event.position, recordedAt: event.recordedAt, event: event.type, detail: details.joined(separator: " "), actor: metadata["actor"],
                        client: clientOfStream[event.streamID], clientIP: address,
                        userAgent: erased ? nil : try await vault.openForTheDay(metadata["userAgent"])))
            }
            return entries
        }
    }

    /// The history of some streams of a realm (a client's, a realm's): type, actor and reason.
    public func history(realm: String, streams: [String]) async throws -> [Entry] {
        return try await ServiceRefusal.translating {
            try await EventLogMaintenance(pool: pool).events(realm: realm, streams: streams).map { event in
                let reason = Self.fields(event.payload)["reason"].map { "reason=\($0)" } ?? ""
                return Entry(
                    position: event.position, recordedAt: event.recordedAt, event: event.type, detail: reason, actor: Self.fields(event.metadata)["actor"])
            }
        }
    }

    /// A JSON object's top-level scalar members as text (what `->>` would give).
    static func fields(_ json: String) -> [String: String] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return [:] }
        var fields: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case let text as String: fields[key] = text
            case let number as NSNumber: fields[key] = number.stringValue
            default: continue
            }
        }
        return fields
    }
}
