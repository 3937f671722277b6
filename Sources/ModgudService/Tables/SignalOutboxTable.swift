import Foundation
import JWTKit
import ModgudDomain
import PQ

/// One stream as the deliverers need it.
struct SignalStreamRow: Sendable {
    var streamID: String
    var realm: String
    var clientID: String
    var issuer: String
    var method: String
    var endpointURL: String?
    var sealedAuthorization: String?
    var format: String
    var status: String

    static let columns = "stream_id, realm, client_id, issuer, method, endpoint_url, push_authorization, format, status"

    init(streamID: String, realm: String, clientID: String, issuer: String, method: String = SignalDeliveryMethod.poll.rawValue, format: String = "iss_sub") {
        self.streamID = streamID
        self.realm = realm
        self.clientID = clientID
        self.issuer = issuer
        self.method = method
        self.format = format
        status = SignalStreamStatus.enabled.rawValue
    }

    init(row: PQRow) throws {
        streamID = try row.decode(String.self, at: 0)
        realm = try row.decode(String.self, at: 1)
        clientID = try row.decode(String.self, at: 2)
        issuer = try row.decode(String.self, at: 3)
        method = try row.decode(String.self, at: 4)
        endpointURL = try row.decode(String?.self, at: 5)
        sealedAuthorization = try row.decode(String?.self, at: 6)
        format = try row.decode(String.self, at: 7)
        status = try row.decode(String.self, at: 8)
    }
}

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

/// The deliverers' SQL over `ssf_streams` and `ssf_outbox` (push: RFC 8935; poll: RFC 8936).
enum SignalOutboxTable {
    /// Leases one push stream whose first waiting SET is due to this instance (`FOR UPDATE SKIP
    /// LOCKED`: two instances never deliver one stream at once, which keeps its order). The
    /// first one, not any: while it backs off, the SETs behind it wait, and so does the stream.
    /// Of a stream that is not enabled, only stream-updated SETs wait to go.
    static func leasePushStream(instance: String, lease: TimeInterval) -> PQQuery {
        """
        UPDATE ssf_streams SET lease_until = now() + make_interval(secs => \(lease)), leased_by = \(instance)
        WHERE stream_id = (
            SELECT s.stream_id FROM ssf_streams s
            WHERE s.method = 'urn:ietf:rfc:8935' AND (s.lease_until IS NULL OR s.lease_until < now())
              AND (SELECT o.next_attempt_at <= now() FROM ssf_outbox o
                   WHERE o.stream_id = s.stream_id AND o.status = 'pending' AND (s.status = 'enabled' OR o.event = 'stream-updated')
                   ORDER BY o.seq LIMIT 1)
            LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING \(unescaped: SignalStreamRow.columns)
        """
    }

    static func release(streamID: String, instance: String) -> PQQuery {
        "UPDATE ssf_streams SET lease_until = NULL, leased_by = NULL WHERE stream_id = \(streamID) AND leased_by = \(instance)"
    }

    static func stream(realm: String, clientID: String) -> PQQuery {
        "SELECT \(unescaped: SignalStreamRow.columns) FROM ssf_streams WHERE realm = \(realm) AND client_id = \(clientID)"
    }

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

    /// Every stream with its pending and dead counts, for the CLI.
    static let overview: PQQuery = """
        SELECT s.realm, s.client_id, s.stream_id, s.method, s.status,
               count(o.seq) FILTER (WHERE o.status = 'pending'), count(o.seq) FILTER (WHERE o.status = 'dead')
        FROM ssf_streams s LEFT JOIN ssf_outbox o USING (stream_id)
        GROUP BY s.realm, s.client_id, s.stream_id, s.method, s.status ORDER BY s.realm, s.client_id
        """
}
