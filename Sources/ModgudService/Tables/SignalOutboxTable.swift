import Foundation
import JWTKit
import ModgudDomain
import PQ

/// One SET waiting in the outbox.
struct SignalOutboxRow: Sendable {
    var seq: Int64
    var jti: String
    var event: String
    var userID: UUID?
    var sessionID: UUID?
    var occurredAt: Date
    var enqueuedAt: Date
    var detail: [String: JWTHeaderField]
    var attempts: Int
    /// Push: whether its next attempt is due.
    var due: Bool

    static let columns = "seq, jti, event, user_id, session_id, occurred_at, enqueued_at, detail, attempts, next_attempt_at <= now()"

    init(seq: Int64, jti: String, event: SignalEvent, userID: UUID?, sessionID: UUID? = nil, at: Date, detail: [String: JWTHeaderField]) {
        self.seq = seq
        self.jti = jti
        self.event = event.rawValue
        self.userID = userID
        self.sessionID = sessionID
        occurredAt = at
        enqueuedAt = at
        self.detail = detail
        attempts = 0
        due = true
    }

    init(row: PQRow) throws {
        seq = try row.decode(Int64.self, at: 0)
        jti = try row.decode(String.self, at: 1)
        event = try row.decode(String.self, at: 2)
        userID = try row.decode(UUID?.self, at: 3)
        sessionID = try row.decode(UUID?.self, at: 4)
        occurredAt = try row.decode(Date.self, at: 5)
        enqueuedAt = try row.decode(Date.self, at: 6)
        detail = try JSONDecoder().decode([String: JWTHeaderField].self, from: Data(try row.decode(PQJSON.self, at: 7).text.utf8))
        attempts = try row.decode(Int.self, at: 8)
        due = try row.decode(Bool.self, at: 9)
    }
}

/// The one home of `ssf_outbox` (`schema/0015_shared_signals.sql`): the SETs per stream in log
/// order, as the transmitter fans facts out into them (joining `ssf_streams` for the streams
/// that carry each event) and as the deliverers send, acknowledge, retry and kill them (push:
/// RFC 8935; poll: RFC 8936).
enum SignalOutboxTable {
    // MARK: Fan-out (the transmitter)

    /// One fact into the outbox of every stream of the realm that carries its event and has
    /// not removed its user; the `jti` is a hash of the stream and the log position, so it is
    /// the same however often the SET is sent.
    static func fanOut(_ fact: SignalFact, realm: String, position: Int64, at: Date) throws -> PQQuery {
        let owner: PQQuery
        switch fact.owner {
        case .user(let id): owner = "\(id)::uuid"
        case .firstEventOf(let stream): owner = "(SELECT (payload->>'userID')::uuid FROM events WHERE stream_id = \(stream) AND stream_version = 1)"
        }
        var extra: PQQuery = "'{}'::jsonb"
        if fact.passkeyFacts, case .firstEventOf(let stream) = fact.owner {
            extra = """
                coalesce((SELECT jsonb_build_object('aaguid', payload->'aaguid', 'backupEligible', payload->'backupEligible')
                          FROM events WHERE stream_id = \(stream) AND stream_version = 1), '{}'::jsonb)
                """
        }
        return """
            INSERT INTO ssf_outbox (stream_id, seq, jti, event, user_id, session_id, occurred_at, detail)
            SELECT s.stream_id, \(position), \(unescaped: jti(position: position)), \(fact.event.rawValue), o.user_id, \(fact.session), \(at),
                   \(PQJSON(try encode(fact.detail)))::jsonb || o.extra
            FROM ssf_streams s, (SELECT \(fragment: owner) AS user_id, \(fragment: extra) AS extra) o
            WHERE s.realm = \(realm) AND s.status <> 'disabled' AND \(fact.event.rawValue) = ANY(s.events)
              AND o.user_id IS NOT NULL AND NOT (o.user_id = ANY(s.removed_users))
            ON CONFLICT DO NOTHING
            """
    }

    /// The verification SET of one stream (SSF 1.0 section 8.1.4): held while paused.
    static func verification(realm: String, clientID: String, state: String?, position: Int64, at: Date) throws -> PQQuery {
        let detail: [String: JWTHeaderField] = state.map { ["state": .string($0)] } ?? [:]
        return """
            INSERT INTO ssf_outbox (stream_id, seq, jti, event, occurred_at, detail)
            SELECT s.stream_id, \(position), \(unescaped: jti(position: position)), \(SignalEvent.verification.rawValue), \(at), \(PQJSON(try encode(detail)))
            FROM ssf_streams s WHERE s.realm = \(realm) AND s.client_id = \(clientID) AND s.status <> 'disabled'
            ON CONFLICT DO NOTHING
            """
    }

    /// The stream-updated SET of an operator's status change (SSF 1.0 section 8.1.5), for any
    /// status: a receiver hears that its stream stopped even though nothing else goes out.
    static func streamUpdated(realm: String, clientID: String, status: SignalStreamStatus, reason: String?, position: Int64, at: Date) throws
        -> PQQuery
    {
        var detail: [String: JWTHeaderField] = ["status": .string(status.rawValue)]
        if let reason { detail["reason"] = .string(reason) }
        return """
            INSERT INTO ssf_outbox (stream_id, seq, jti, event, occurred_at, detail)
            SELECT s.stream_id, \(position), \(unescaped: jti(position: position)), \(SignalEvent.streamUpdated.rawValue), \(at), \(PQJSON(try encode(detail)))
            FROM ssf_streams s WHERE s.realm = \(realm) AND s.client_id = \(clientID)
            ON CONFLICT DO NOTHING
            """
    }

    /// 32 hex digits of SHA-256 over `stream_id/position` (SQL, over the row's `s.stream_id`).
    private static func jti(position: Int64) -> String {
        "left(encode(sha256(convert_to(s.stream_id || '/' || \(position), 'UTF8')), 'hex'), 32)"
    }

    private static func encode(_ detail: [String: JWTHeaderField]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(detail), as: UTF8.self)
    }

    /// Everything a stream holds (it was disabled or deleted).
    static func drop(realm: String, clientID: String) -> PQQuery {
        "DELETE FROM ssf_outbox WHERE stream_id IN (SELECT stream_id FROM ssf_streams WHERE realm = \(realm) AND client_id = \(clientID))"
    }

    // MARK: Delivery

    /// The stream's pending SETs in log order; of a stream that is not enabled, only its
    /// stream-updated SETs (the rest are held, or were dropped).
    static func pending(streamID: String, enabled: Bool, limit: Int) -> PQQuery {
        """
        SELECT \(unescaped: SignalOutboxRow.columns) FROM ssf_outbox
        WHERE stream_id = \(streamID) AND status = 'pending' AND (\(enabled) OR event = 'stream-updated') ORDER BY seq LIMIT \(limit)
        """
    }

    static func hasMore(streamID: String, after seq: Int64) -> PQQuery {
        "SELECT EXISTS (SELECT 1 FROM ssf_outbox WHERE stream_id = \(streamID) AND status = 'pending' AND seq > \(seq))"
    }

    /// Accepted (push) or acknowledged (poll): gone.
    static func delivered(streamID: String, seq: Int64) -> PQQuery {
        "DELETE FROM ssf_outbox WHERE stream_id = \(streamID) AND seq = \(seq)"
    }

    /// RFC 8936 section 2.4: acknowledged by `jti`; returns the rows removed.
    static func acknowledge(streamID: String, jtis: [String]) -> PQQuery {
        "DELETE FROM ssf_outbox WHERE stream_id = \(streamID) AND jti = ANY(\(jtis)) AND status = 'pending'"
    }

    static func failed(streamID: String, seq: Int64, error: String, retryAfter: TimeInterval, dead: Bool) -> PQQuery {
        """
        UPDATE ssf_outbox SET attempts = attempts + 1, last_error = \(String(error.prefix(500))),
            next_attempt_at = now() + make_interval(secs => \(retryAfter)), status = CASE WHEN \(dead) THEN 'dead' ELSE 'pending' END
        WHERE stream_id = \(streamID) AND seq = \(seq)
        """
    }

    /// RFC 8936 section 2.4.4 `setErrs`: the receiver refused these SETs; kept for the operator.
    static func rejected(streamID: String, jti: String, error: String) -> PQQuery {
        """
        UPDATE ssf_outbox SET status = 'dead', last_error = \(String(error.prefix(500)))
        WHERE stream_id = \(streamID) AND jti = \(jti) AND status = 'pending'
        """
    }

    /// SETs per status, for `/metrics` (`modgud_ssf_outbox`).
    static let counts: PQQuery = "SELECT status, count(*) FROM ssf_outbox GROUP BY status"

    /// Dead SETs for the operator, newest first.
    static func dead(limit: Int) -> PQQuery {
        """
        SELECT o.stream_id, s.realm, s.client_id, o.seq, o.jti, o.event, o.attempts, o.last_error, o.enqueued_at
        FROM ssf_outbox o JOIN ssf_streams s USING (stream_id)
        WHERE o.status = 'dead' ORDER BY o.enqueued_at DESC LIMIT \(limit)
        """
    }

    /// Puts dead SETs back in line (all of a stream, or all): the operator fixed the receiver.
    static func retryDead(streamID: String?) -> PQQuery {
        """
        UPDATE ssf_outbox SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
        WHERE status = 'dead' AND (\(streamID)::text IS NULL OR stream_id = \(streamID))
        """
    }
}
