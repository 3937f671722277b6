#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PQ

/// What operator tools do to the log outside appends and reads by cursor: read raw events for
/// an audit or a rewrite, rewrite payloads in place (sealing personal data written before
/// sealing began), rename a stream. Its SQL lives in `EventStoreSQL`. Appends never go
/// through here; a rewrite changes no version and no order.
public struct EventLogMaintenance: Sendable {
    let pool: PQPool

    public init(pool: PQPool) {
        self.pool = pool
    }

    /// One stored event with its payload and metadata as JSON text.
    public struct RawEvent: Sendable {
        public var position: Int64
        public var streamID: String
        public var realm: String
        public var type: String
        public var payload: String
        public var metadata: String
        public var recordedAt: Date
    }

    /// Up to `limit` events after `position`, in position order.
    public func events(afterPosition position: Int64, limit: Int) async throws -> [RawEvent] {
        try await pool.query(EventStoreSQL.rawEvents(afterPosition: position, limit: limit)).rows.map(Self.raw)
    }

    /// Every event of the given streams of one realm, in log order.
    public func events(realm: String, streams: [String]) async throws -> [RawEvent] {
        try await pool.query(EventStoreSQL.rawEvents(realm: realm, streams: streams)).rows.map(Self.raw)
    }

    /// The newest events of some streams of a realm, newest first: only `types` (nil: every
    /// type), recorded at or after `since`, positioned before `before` (a keyset page), at
    /// most `limit` (nil: every one).
    public func newestEvents(realm: String, streams: [String], types: [String]?, since: Date?, before: Int64?, limit: Int?) async throws
        -> [RawEvent]
    {
        try await pool.query(EventStoreSQL.newestEvents(realm: realm, streams: streams, types: types, since: since, before: before, limit: limit))
            .rows.map(Self.raw)
    }

    /// A realm's sign-in failures recorded at or after `since`, newest first, at most `limit`:
    /// the events of `events_sign_in_failures` (migration 0019), read through that index.
    public func signInFailures(realm: String, since: Date, limit: Int) async throws -> [RawEvent] {
        try await pool.query(EventStoreSQL.signInFailures(realm: realm, since: since, limit: limit)).rows.map(Self.raw)
    }

    /// The streams of a realm holding an event of `type` whose payload's `key` equals `value`
    /// (case-insensitively). A scan of that type's events: an operator command's cost.
    public func streams(realm: String, withEventOfType type: String, payloadKey key: String, equalTo value: String) async throws -> [String] {
        try await pool.query(EventStoreSQL.streams(realm: realm, type: type, payloadKey: key, value: value)).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// The payload field `key` of the first event of `type` in a stream.
    public func firstPayloadField(_ key: String, stream: String, type: String) async throws -> String? {
        try await pool.query(EventStoreSQL.firstPayloadField(key, stream: stream, type: type)).first?.decode(String?.self, at: 0)
    }

    /// A payload and metadata rewrite of one event, applied only if the event still holds what
    /// was read.
    public struct Rewrite: Sendable {
        public var event: RawEvent
        public var payload: String
        public var metadata: String

        public init(event: RawEvent, payload: String, metadata: String) {
            self.event = event
            self.payload = payload
            self.metadata = metadata
        }
    }

    /// Applies rewrites in one transaction, recording each rewritten row's new leaf hash for the
    /// audit log (`AuditRedactionRecorder`).
    public func apply(_ rewrites: [Rewrite]) async throws {
        guard !rewrites.isEmpty else { return }
        let statements = rewrites.map(EventStoreSQL.rewrite)
        try await pool.transaction { connection in
            var redactions: [AuditRedaction] = []
            for statement in statements {
                redactions += try connection.query(statement).rows.map(Self.rewritten)
            }
            try AuditRedactionRecorder.record(redactions, operation: "seal-legacy", actor: "operator:privacy", on: connection)
        }
    }

    /// The ids of streams matching a POSIX regular expression.
    public func streamIDs(matching pattern: String) async throws -> [String] {
        try await pool.query(EventStoreSQL.streamIDs(matching: pattern)).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// Renames a stream and its events in one transaction (same events, same versions),
    /// recording the events' new leaf hashes for the audit log.
    public func renameStream(_ old: String, to new: String) async throws {
        try await pool.transaction { connection in
            let (stream, events) = EventStoreSQL.renameStream(old, to: new)
            try connection.query(stream)
            let redactions = try connection.query(events).rows.map(Self.rewritten)
            try AuditRedactionRecorder.record(redactions, operation: "rename-stream", actor: "operator:privacy", on: connection)
        }
    }

    /// A rewritten row (`AuditLeaf.columns`) as the audit log records it.
    private static func rewritten(_ row: PQRow) throws -> AuditRedaction {
        let leaf = try AuditLeaf(row: row)
        return AuditRedaction(position: leaf.position, realm: leaf.realm, kind: .rewritten, newHash: leaf.hash)
    }

    private static func raw(_ row: PQRow) throws -> RawEvent {
        RawEvent(
            position: try row.decode(Int64.self, at: 0), streamID: try row.decode(String.self, at: 1), realm: try row.decode(String.self, at: 2),
            type: try row.decode(String.self, at: 3), payload: try row.decode(String.self, at: 4), metadata: try row.decode(String.self, at: 5),
            recordedAt: try row.decode(Date.self, at: 6))
    }
}

extension EventStoreSQL {
    static let rawColumns = "position, stream_id, realm, type, payload::text, metadata::text, recorded_at"

    static func rawEvents(afterPosition position: Int64, limit: Int) -> PQQuery {
        "SELECT \(unescaped: rawColumns) FROM events WHERE position > \(position) ORDER BY position LIMIT \(limit)"
    }

    static func rawEvents(realm: String, streams: [String]) -> PQQuery {
        "SELECT \(unescaped: rawColumns) FROM events WHERE realm = \(realm) AND stream_id = ANY(\(streams)) ORDER BY tx_id, position"
    }

    /// The predicate of the partial index `events_sign_in_failures`, word for word (the
    /// planner uses the index only for a query that states it).
    static let signInFailurePredicate = """
        (type IN ('challenge.attempt_failed', 'challenge.burned', 'passkey.clone_suspected', 'passkey.assertion_failed', \
        'token_family.refresh_refused', 'rate_limit.tripped') \
        OR (type = 'token_family.revoked' AND payload->>'reason' IN ('reuse', 'stamp')))
        """

    static func newestEvents(realm: String, streams: [String], types: [String]?, since: Date?, before: Int64?, limit: Int?) -> PQQuery {
        """
        SELECT \(unescaped: rawColumns) FROM events
        WHERE realm = \(realm) AND stream_id = ANY(\(streams))
          AND (\(types)::text[] IS NULL OR type = ANY(\(types)::text[]))
          AND (\(since)::timestamptz IS NULL OR recorded_at >= \(since)::timestamptz)
          AND (\(before)::int8 IS NULL OR position < \(before)::int8)
        ORDER BY position DESC LIMIT \(limit)::int8
        """
    }

    static func signInFailures(realm: String, since: Date, limit: Int) -> PQQuery {
        """
        SELECT \(unescaped: rawColumns) FROM events
        WHERE realm = \(realm) AND \(unescaped: signInFailurePredicate) AND recorded_at >= \(since)
        ORDER BY position DESC LIMIT \(limit)
        """
    }

    static func streams(realm: String, type: String, payloadKey: String, value: String) -> PQQuery {
        """
        SELECT DISTINCT stream_id FROM events
        WHERE realm = \(realm) AND type = \(type) AND lower(payload->>\(payloadKey)) = \(value.lowercased())
        """
    }

    static func firstPayloadField(_ key: String, stream: String, type: String) -> PQQuery {
        "SELECT payload->>\(key) FROM events WHERE stream_id = \(stream) AND type = \(type) ORDER BY stream_version LIMIT 1"
    }

    static func rewrite(_ rewrite: EventLogMaintenance.Rewrite) -> PQQuery {
        """
        UPDATE events e SET payload = \(rewrite.payload)::jsonb, metadata = \(rewrite.metadata)::jsonb
        WHERE position = \(rewrite.event.position) AND payload = \(rewrite.event.payload)::jsonb AND metadata = \(rewrite.event.metadata)::jsonb
        RETURNING \(unescaped: AuditLeaf.columns)
        """
    }

    static func streamIDs(matching pattern: String) -> PQQuery {
        "SELECT id FROM streams WHERE id ~ \(pattern)"
    }

    static func renameStream(_ old: String, to new: String) -> (stream: PQQuery, events: PQQuery) {
        (
            "UPDATE streams SET id = \(new) WHERE id = \(old)",
            "UPDATE events e SET stream_id = \(new) WHERE stream_id = \(old) RETURNING \(unescaped: AuditLeaf.columns)"
        )
    }
}
