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

/// The one home of `ssf_streams` (`schema/0015_shared_signals.sql`): each receiver's stream as
/// the transmitter applied its events, leased by one deliverer at a time (the lease looks at
/// the stream's first waiting SET in `ssf_outbox`).
enum SignalStreamsTable {
    /// Whether any receiver has a stream (with none, the transmitter only keeps its cursor up).
    static let anyStream: PQQuery = "SELECT EXISTS (SELECT 1 FROM ssf_streams)"

    // MARK: Streams as the transmitter applies them (from their events)

    static func create(realm: String, created: SignalStreamCreated) -> PQQuery {
        let configuration = created.configuration
        return """
            INSERT INTO ssf_streams (stream_id, realm, client_id, issuer, method, endpoint_url, push_authorization, events, format, status)
            VALUES (\(created.streamID), \(realm), \(created.clientID), \(created.issuer), \(configuration.method.rawValue), \(configuration.endpointURL),
                    \(configuration.sealedAuthorization), \(delivered(configuration)), \(configuration.format.rawValue), 'enabled')
            ON CONFLICT (stream_id) DO NOTHING
            """
    }

    static func configure(realm: String, clientID: String, _ configuration: SignalStreamConfiguration) -> PQQuery {
        """
        UPDATE ssf_streams SET method = \(configuration.method.rawValue), endpoint_url = \(configuration.endpointURL),
            push_authorization = \(configuration.sealedAuthorization), events = \(delivered(configuration)), format = \(configuration.format.rawValue)
        WHERE realm = \(realm) AND client_id = \(clientID)
        """
    }

    static func setStatus(realm: String, clientID: String, _ status: SignalStreamStatus) -> [PQQuery] {
        var statements: [PQQuery] = ["UPDATE ssf_streams SET status = \(status.rawValue) WHERE realm = \(realm) AND client_id = \(clientID)"]
        // SSF 1.0 section 8.1.2: a disabled stream holds nothing.
        if status == .disabled { statements.append(SignalOutboxTable.drop(realm: realm, clientID: clientID)) }
        return statements
    }

    static func removeSubject(realm: String, clientID: String, userID: UUID) -> PQQuery {
        """
        UPDATE ssf_streams SET removed_users = array_append(array_remove(removed_users, \(userID)::uuid), \(userID)::uuid)
        WHERE realm = \(realm) AND client_id = \(clientID)
        """
    }

    static func addSubject(realm: String, clientID: String, userID: UUID) -> PQQuery {
        "UPDATE ssf_streams SET removed_users = array_remove(removed_users, \(userID)::uuid) WHERE realm = \(realm) AND client_id = \(clientID)"
    }

    static func delete(realm: String, clientID: String) -> [PQQuery] {
        [SignalOutboxTable.drop(realm: realm, clientID: clientID), "DELETE FROM ssf_streams WHERE realm = \(realm) AND client_id = \(clientID)"]
    }

    private static func delivered(_ configuration: SignalStreamConfiguration) -> [String] {
        SignalEvent.delivered(requested: configuration.eventsRequested).map(\.rawValue)
    }

    // MARK: Delivery

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

    /// Every stream with its pending and dead counts, for the CLI.
    static let overview: PQQuery = """
        SELECT s.realm, s.client_id, s.stream_id, s.method, s.status,
               count(o.seq) FILTER (WHERE o.status = 'pending'), count(o.seq) FILTER (WHERE o.status = 'dead')
        FROM ssf_streams s LEFT JOIN ssf_outbox o USING (stream_id)
        GROUP BY s.realm, s.client_id, s.stream_id, s.method, s.status ORDER BY s.realm, s.client_id
        """
}
