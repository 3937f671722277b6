#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EventSourcing
import PQ

/// Every statement the event store runs against `streams`, `events`, `checkpoints` and
/// `projection_failures`: the one place their SQL lives (docs/architecture.md, "House habits").
public enum EventStoreSQL {
    /// The NOTIFY channel that wakes projection daemons.
    public static let channel = "modgud_events"

    /// The columns `RecordedEvent.init(row:)` decodes, in order.
    static let eventColumns = """
        position, tx_id, stream_id, stream_type, stream_version, realm, type, revision, payload,
        metadata->>'correlationID', metadata->>'causationID', metadata->>'actor', metadata->>'clientIP', recorded_at
        """

    /// The name of the CHECK constraint a version conflict violates.
    static let conflictConstraint = "events_expected_version"

    /// Appends events to one stream at an exact expected version, in one statement.
    ///
    /// `created` makes the stream row when none is expected; `advanced` moves an existing row
    /// from exactly the expected version (a concurrent writer holds the row lock until it
    /// commits, after which the re-checked condition fails). When neither matched, every
    /// event gets version -1, which violates `events_expected_version`: the statement fails,
    /// and with it the whole pipelined append. Measured about twice as fast as the same
    /// logic in a PL/pgSQL function (docs/performance.md, "Event store performance").
    static func append(
        stream: StreamRef, expected: ExpectedVersion, types: [String], revisions: [Int32], payloads: [PQJSON], metadata: PQJSON
    ) -> PQQuery {
        PQQuery(
            """
            WITH created AS (
                INSERT INTO streams (id, type, realm, version)
                SELECT $1, $2, $3, $5 WHERE $4 = 0
                ON CONFLICT (id) DO NOTHING
                RETURNING version
            ), advanced AS (
                UPDATE streams SET version = version + $5, updated_at = now()
                WHERE id = $1 AND version = $4 AND $4 > 0
                RETURNING version
            ), guarded AS (
                SELECT version FROM created UNION ALL SELECT version FROM advanced
            )
            INSERT INTO events (stream_id, stream_type, stream_version, realm, type, revision, payload, metadata)
            SELECT $1, $2, coalesce((SELECT version FROM guarded) - $5 + e.ordinality, -1), $3, e.type, e.revision, e.payload, $9
            FROM unnest($6::text[], $7::int[], $8::jsonb[]) WITH ORDINALITY AS e (type, revision, payload, ordinality)
            ORDER BY e.ordinality
            RETURNING position, tx_id, stream_version, recorded_at
            """,
            stream.id, stream.type, stream.realm, expected.value, Int64(types.count), types, revisions, payloads, metadata)
    }

    static let notify: PQQuery = "SELECT pg_notify('\(unescaped: channel)', '')"

    /// The log's horizon (no transaction below it is still running) and the WAL position after
    /// it, for a reader of the log through logical replication (the live realm move, issue 71):
    /// once a subscriber has confirmed the position, it has every event below the horizon.
    public static let horizonAndWALPosition: PQQuery = "SELECT pg_snapshot_xmin(pg_current_snapshot()), pg_current_wal_lsn()::text"

    /// Wakes the projection daemons (an append made outside the store: the live move).
    public static let wakeProjections: PQQuery = notify

    static func readStream(_ streamID: String, after version: Int64) -> PQQuery {
        """
        SELECT \(unescaped: eventColumns) FROM events
        WHERE stream_id = \(streamID) AND stream_version > \(version)
        ORDER BY stream_version
        """
    }

    /// The gap-safe read of the log (docs/architecture.md, "The gap problem"): after the cursor in (tx_id, position)
    /// order, admitting only transactions older than every transaction still running, so a
    /// transaction that inserted earlier but commits later is never passed over.
    static func readLog(after cursor: LogCursor, limit: Int, filter: LogFilter, gapSafe: Bool = true) -> PQQuery {
        let types = filter.types.map { Array($0).sorted() }
        return """
            SELECT \(unescaped: eventColumns) FROM events
            WHERE (tx_id, position) > (\(PQTransactionID(cursor.transactionID)), \(cursor.position))
              \(unescaped: gapSafe ? "AND tx_id < pg_snapshot_xmin(pg_current_snapshot())" : "")
              AND (\(filter.realm)::text IS NULL OR realm = \(filter.realm))
              AND (\(filter.streamID)::text IS NULL OR stream_id = \(filter.streamID))
              AND (\(types)::text[] IS NULL OR type = ANY(\(types)))
            ORDER BY tx_id, position
            LIMIT \(limit)
            """
    }

    /// The gap-safe read of the events of `types` after the cursor, and the newest admitted
    /// event of any type, both under one snapshot's horizon (one statement: two would see two
    /// horizons). The horizon comes last, as a row whose `stream_id` is null; a follower that
    /// got fewer than `limit` events may move its cursor up to it, past everything it has no
    /// use for. Read it with `EventLogReads.admitted`.
    static func readAdmitted(after cursor: LogCursor, types: [String], limit: Int) -> PQQuery {
        """
        WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
        picked AS (
            SELECT \(unescaped: eventColumns) FROM events, horizon h
            WHERE (tx_id, position) > (\(PQTransactionID(cursor.transactionID)), \(cursor.position))
              AND tx_id < h.xmin AND type = ANY(\(types))
            ORDER BY tx_id, position
            LIMIT \(limit)),
        tail AS (
            SELECT position, tx_id FROM events, horizon h
            WHERE tx_id < h.xmin ORDER BY tx_id DESC, position DESC LIMIT 1)
        SELECT * FROM (SELECT * FROM picked ORDER BY tx_id, position) p
        UNION ALL
        SELECT t.position, t.tx_id, \(unescaped: Array(repeating: "NULL", count: eventColumnCount - 2).joined(separator: ", ")) FROM tail t
        """
    }

    /// How many columns `eventColumns` names.
    static let eventColumnCount = 14

    // MARK: Projections

    public static func tryLockProjectionForTransaction(_ name: String) -> PQQuery {
        "SELECT pg_try_advisory_xact_lock(hashtextextended(\("modgud.projection/" + name), 0))"
    }

    static func tryLockProjectionForSession(_ name: String) -> PQQuery {
        "SELECT pg_try_advisory_lock(hashtextextended(\("modgud.projection/" + name), 0))"
    }

    static func unlockProjectionForSession(_ name: String) -> PQQuery {
        "SELECT pg_advisory_unlock(hashtextextended(\("modgud.projection/" + name), 0))"
    }

    public static func checkpoint(_ name: String) -> PQQuery {
        "SELECT tx_id, position, applied, updated_at FROM checkpoints WHERE projection = \(name)"
    }

    /// How long ago (seconds) the oldest admitted event the projection has not applied was
    /// recorded; no row when it is caught up.
    static func oldestUnappliedAge(_ name: String) -> PQQuery {
        """
        SELECT extract(epoch FROM now() - e.recorded_at)::float8 FROM events e
        WHERE (e.tx_id, e.position) > coalesce(
                (SELECT (c.tx_id, c.position) FROM checkpoints c WHERE c.projection = \(name)), ('0'::xid8, 0::bigint))
          AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx_id, e.position
        LIMIT 1
        """
    }

    public static func saveCheckpoint(_ name: String, cursor: LogCursor, applied: Int) -> PQQuery {
        """
        INSERT INTO checkpoints (projection, tx_id, position, applied, updated_at)
        VALUES (\(name), \(PQTransactionID(cursor.transactionID)), \(cursor.position), \(applied), now())
        ON CONFLICT (projection) DO UPDATE
        SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position,
            applied = checkpoints.applied + EXCLUDED.applied, updated_at = now()
        """
    }

    static func replaceCheckpoint(_ name: String, cursor: LogCursor, applied: Int) -> PQQuery {
        """
        INSERT INTO checkpoints (projection, tx_id, position, applied, updated_at)
        VALUES (\(name), \(PQTransactionID(cursor.transactionID)), \(cursor.position), \(applied), now())
        ON CONFLICT (projection) DO UPDATE
        SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position, applied = EXCLUDED.applied, updated_at = now()
        """
    }

    static func recordFailure(_ name: String, event: RecordedEvent, error: String, parkAfter attempts: Int) -> PQQuery {
        """
        INSERT INTO projection_failures AS f (projection, position, tx_id, event_type, attempts, last_error, parked)
        VALUES (\(name), \(event.position), \(PQTransactionID(event.transactionID)), \(event.type), 1, \(error), 1 >= \(attempts))
        ON CONFLICT (projection, position) DO UPDATE
        SET attempts = f.attempts + 1, last_error = EXCLUDED.last_error, last_failed_at = now(),
            parked = f.parked OR f.attempts + 1 >= \(attempts)
        RETURNING parked, attempts
        """
    }

    static func parkedPositions(_ name: String) -> PQQuery {
        "SELECT position FROM projection_failures WHERE projection = \(name) AND parked"
    }

    static func failures(_ name: String) -> PQQuery {
        """
        SELECT position, event_type, attempts, parked, last_error, last_failed_at
        FROM projection_failures WHERE projection = \(name) ORDER BY position
        """
    }

    /// Events after the cursor (committed and visible now), and how many of them wait behind
    /// a transaction that is still open (the lag an open transaction causes).
    static func lag(after cursor: LogCursor) -> PQQuery {
        """
        SELECT count(*),
               count(*) FILTER (WHERE tx_id >= pg_snapshot_xmin(pg_current_snapshot()))
        FROM events WHERE (tx_id, position) > (\(PQTransactionID(cursor.transactionID)), \(cursor.position))
        """
    }

    // MARK: Retention

    /// Deletes up to `limit` streams of the given types created and last written before
    /// `cutoff`, with their events, in one statement; answers a row per removed event (realm,
    /// position, each with the count of streams dropped) for the audit log's record. `log_statistics` counts the log as it
    /// is, so what it had counted of the removed events is taken back in the same statement
    /// (a rebuild after the prune then equals the continuous table).
    static func pruneStreams(types: [String], cutoff: Date, limit: Int) -> PQQuery {
        """
        WITH doomed AS (
            SELECT id FROM streams
            WHERE type = ANY(\(types)::text[]) AND created_at < \(cutoff) AND updated_at < \(cutoff)
            ORDER BY type, created_at
            LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
        ), removed AS (
            DELETE FROM events WHERE stream_id IN (SELECT id FROM doomed)
            RETURNING realm, type, tx_id, position
        ), uncounted AS (
            UPDATE log_statistics s SET events = s.events - r.n
            FROM (SELECT r.realm, r.type, count(*) AS n FROM removed r JOIN checkpoints c ON c.projection = 'log_statistics'
                  WHERE (r.tx_id, r.position) <= (c.tx_id, c.position) GROUP BY r.realm, r.type) r
            WHERE s.realm = r.realm AND s.type = r.type
            RETURNING 1
        ), dropped AS (
            DELETE FROM streams WHERE id IN (SELECT id FROM doomed) RETURNING 1
        )
        SELECT (SELECT count(*) FROM dropped)::bigint, r.realm, r.position FROM removed r
        """
    }

    /// Events in the log of these types (nil: of any type).
    static func countEvents(types: Set<String>?) -> PQQuery {
        let types = types.map { Array($0).sorted() }
        return "SELECT count(*) FROM events WHERE \(types)::text[] IS NULL OR type = ANY(\(types))"
    }
}

extension PostgresEventStore {
    /// An SQL expression for a read-model query: the current version of the stream
    /// `<streamType>-<idColumn>`, 0 when it has none. A service hands the version to the
    /// stream's actor, so a warm actor reads nothing more and an append still fails on a
    /// concurrent writer's event (docs/decisions.md, the refresh lookup). `streamType` is a
    /// code constant; it is quoted as an SQL literal.
    public static func streamVersionSQL(streamType: String, idColumn: String) -> String {
        let prefix = "'" + (streamType + "-").split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        return "coalesce((SELECT version FROM streams WHERE id = \(prefix) || \(idColumn)::text), 0)"
    }
}
