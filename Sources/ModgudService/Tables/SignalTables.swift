import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ

/// The SQL of the Shared Signals transmitter's tables (`schema/0015_shared_signals.sql`):
/// the streams as it applied them, and the outbox of SETs per stream in log order.
enum SignalTables {
    /// The transmitter's cursor in `checkpoints`, and its advisory lock.
    static let cursorName = "ssf_transmitter"
    /// NOTIFY channel: SETs were enqueued (payload: nothing; every instance looks).
    static let channel = "modgud_ssf"
    /// Whether any receiver has a stream (with none, the transmitter only keeps its cursor up).
    static let anyStream: PQQuery = "SELECT EXISTS (SELECT 1 FROM ssf_streams)"
    /// Sent in the batch's transaction: delivered at commit, to every instance's relay.
    static let notify: PQQuery = "SELECT pg_notify(\(channel), '')"

    // MARK: The transmitter's read of the log

    /// The next SET-worthy events after `cursor`, gap-safe (docs/architecture.md, "The gap
    /// problem"), and, as the last row with a null type, the newest admitted event: when
    /// fewer than `limit` events came back, the cursor may move up to it, past everything
    /// the transmitter has no use for.
    static func events(after cursor: LogCursor, types: [String], limit: Int) -> PQQuery {
        """
        WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
        picked AS (
            SELECT e.position, e.tx_id, e.stream_id, e.stream_type, e.stream_version, e.realm, e.type, e.revision, e.payload,
                   e.metadata->>'correlationID', e.metadata->>'causationID', e.metadata->>'actor', e.metadata->>'clientIP', e.recorded_at
            FROM events e, horizon h
            WHERE (e.tx_id, e.position) > (\(PQTransactionID(cursor.transactionID)), \(cursor.position))
              AND e.tx_id < h.xmin AND e.type = ANY(\(types))
            ORDER BY e.tx_id, e.position
            LIMIT \(limit)),
        tail AS (
            SELECT e.position, e.tx_id FROM events e, horizon h
            WHERE e.tx_id < h.xmin ORDER BY e.tx_id DESC, e.position DESC LIMIT 1)
        SELECT * FROM (SELECT * FROM picked ORDER BY tx_id, position) p
        UNION ALL
        SELECT t.position, t.tx_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM tail t
        """
    }

    // MARK: Fan-out

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

    // MARK: Streams as the transmitter applies them

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
        if status == .disabled { statements.append(dropOutbox(realm: realm, clientID: clientID)) }
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
        [dropOutbox(realm: realm, clientID: clientID), "DELETE FROM ssf_streams WHERE realm = \(realm) AND client_id = \(clientID)"]
    }

    private static func dropOutbox(realm: String, clientID: String) -> PQQuery {
        "DELETE FROM ssf_outbox WHERE stream_id IN (SELECT stream_id FROM ssf_streams WHERE realm = \(realm) AND client_id = \(clientID))"
    }

    private static func delivered(_ configuration: SignalStreamConfiguration) -> [String] {
        SignalEvent.delivered(requested: configuration.eventsRequested).map(\.rawValue)
    }
}
