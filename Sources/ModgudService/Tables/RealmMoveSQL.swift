import EventStorePostgres
import PQ

/// The one home of a realm move's SQL (issue 71, `RealmMove`): the publication on the source
/// cell, the staging database and its subscription on the target's cluster, the fence, the
/// transfer of the realm's events and state, the re-base of the target's positions, and the
/// retirement of what the source kept. PostgreSQL 15, "Logical Replication": publications with
/// a row filter (31.3), subscriptions with an initial copy (31.2, 31.7), `pg_replication_slots`.
enum RealmMoveSQL {
    /// A string as an SQL literal, for DDL, which takes no parameters (standard_conforming_strings).
    static func literal(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The condition that picks a table's rows of `realm`.
    static func ofRealm(_ table: RealmMoveTables.Copied, _ realm: String) -> PQQuery {
        switch table.owner {
        case .column(let column): return "\(unescaped: PQQuery.quoteIdentifier(column)) = \(realm)"
        case .signalStream: return "stream_id IN (SELECT stream_id FROM ssf_streams WHERE realm = \(realm))"
        }
    }

    // MARK: Source cell

    /// Only inserts are published: `events` is insert-only, and a row filter on UPDATE or
    /// DELETE would need `realm` in the replica identity (31.3.2), which retention's deletes
    /// would then be refused for.
    static func createPublication(_ name: String, realm: String) -> PQQuery {
        "CREATE PUBLICATION \(unescaped: PQQuery.quoteIdentifier(name)) FOR TABLE events WHERE (realm = \(unescaped: literal(realm))) WITH (publish = 'insert')"
    }

    /// The logical slot the subscription streams from (after the publication: pgoutput reads
    /// the publication as of each change's WAL position).
    static func createSlot(_ name: String) -> PQQuery {
        "SELECT pg_create_logical_replication_slot(\(name), 'pgoutput') WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = \(name))"
    }

    /// The slot's walsender, if one still streams from it (nil: idle), when the slot exists.
    static func slotSender(_ name: String) -> PQQuery { "SELECT active_pid FROM pg_replication_slots WHERE slot_name = \(name)" }
    static func terminate(_ pid: Int32) -> PQQuery { "SELECT pg_terminate_backend(\(pid))" }
    static func dropSlot(_ name: String) -> PQQuery { "SELECT 1 FROM (SELECT pg_drop_replication_slot(\(name))) d" }

    static func publicationExists(_ name: String) -> PQQuery { "SELECT count(*) FROM pg_publication WHERE pubname = \(name)" }
    static func dropPublication(_ name: String) -> PQQuery { "DROP PUBLICATION IF EXISTS \(unescaped: PQQuery.quoteIdentifier(name))" }
    static let walLevel: PQQuery = "SELECT current_setting('wal_level')"

    /// How far behind the slot is (bytes), and whether it has confirmed `lsn`.
    static func slot(_ name: String, confirmed lsn: String) -> PQQuery {
        """
        SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::int8, coalesce(confirmed_flush_lsn >= \(lsn)::pg_lsn, false)
        FROM pg_replication_slots WHERE slot_name = \(name)
        """
    }

    /// The realm's events in the source: how many, and their positions' range.
    static func eventRange(realm: String) -> PQQuery {
        "SELECT count(*), coalesce(min(position), 0), coalesce(max(position), 0) FROM events WHERE realm = \(realm)"
    }

    /// Raises SQLSTATE 25006 (read_only_sql_transaction), which the service already answers
    /// with 503 and `Retry-After`, as it does a standby after a failover.
    static let fenceFunction: PQQuery = """
        CREATE OR REPLACE FUNCTION modgud_realm_fence() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'realm % has moved or is moving to another cell', TG_ARGV[0] USING ERRCODE = 'read_only_sql_transaction';
        END $$
        """

    /// Two triggers per table (NEW for writes, OLD for deletes), so a row of another realm
    /// costs a comparison in C and never a call. Creating a trigger takes SHARE ROW EXCLUSIVE,
    /// which waits for every open transaction that wrote the table: after the last one, no
    /// write of the realm is in flight and none can commit (docs/decisions.md).
    static func fence(table: String, column: String, realm: String, tag: String) -> [PQQuery] {
        let t = PQQuery.quoteIdentifier(table), value = literal(realm), c = PQQuery.quoteIdentifier(column)
        return [
            """
            CREATE OR REPLACE TRIGGER \(unescaped: PQQuery.quoteIdentifier("modgud_fence_\(tag)_w")) BEFORE INSERT OR UPDATE ON \(unescaped: t)
            FOR EACH ROW WHEN (NEW.\(unescaped: c) = \(unescaped: value)) EXECUTE FUNCTION modgud_realm_fence(\(unescaped: value))
            """,
            """
            CREATE OR REPLACE TRIGGER \(unescaped: PQQuery.quoteIdentifier("modgud_fence_\(tag)_d")) BEFORE DELETE ON \(unescaped: t)
            FOR EACH ROW WHEN (OLD.\(unescaped: c) = \(unescaped: value)) EXECUTE FUNCTION modgud_realm_fence(\(unescaped: value))
            """,
        ]
    }

    static func unfence(table: String, tag: String) -> [PQQuery] {
        ["w", "d"].map { "DROP TRIGGER IF EXISTS \(unescaped: PQQuery.quoteIdentifier("modgud_fence_\(tag)_\($0)")) ON \(unescaped: PQQuery.quoteIdentifier(table))" }
    }

    /// The rows of a realm-owned table, as one JSON array (`to_jsonb` keeps every type's text).
    static func rows(of table: RealmMoveTables.Copied, realm: String) -> PQQuery {
        "SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')::text, count(*) FROM \(unescaped: PQQuery.quoteIdentifier(table.name)) t WHERE \(fragment: ofRealm(table, realm))"
    }

    /// Unexpired DPoP `jti`s of every realm: the table has no realm column, and a jti of
    /// another realm in the target refuses only a proof already spent (RFC 9449, 11.1).
    static let liveJTIs: PQQuery = "SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')::text FROM dpop_jtis t WHERE expires_at > now()"

    // MARK: Target cell

    static func databaseExists(_ name: String) -> PQQuery { "SELECT count(*) FROM pg_database WHERE datname = \(name)" }
    static func createDatabase(_ name: String) -> PQQuery { "CREATE DATABASE \(unescaped: PQQuery.quoteIdentifier(name))" }
    static func dropDatabase(_ name: String) -> PQQuery { "DROP DATABASE IF EXISTS \(unescaped: PQQuery.quoteIdentifier(name)) WITH (FORCE)" }

    static func replaceRows(of table: RealmMoveTables.Copied, realm: String, json: String) -> [PQQuery] {
        let t = PQQuery.quoteIdentifier(table.name)
        if RealmMoveTables.appendOnly.contains(table.name) {
            // Its trigger refuses any DELETE: add the rows the target does not have yet.
            return ["INSERT INTO \(unescaped: t) SELECT * FROM jsonb_populate_recordset(NULL::\(unescaped: t), \(json)::jsonb) EXCEPT SELECT * FROM \(unescaped: t)"]
        }
        return [
            "DELETE FROM \(unescaped: t) WHERE \(fragment: ofRealm(table, realm))",
            "INSERT INTO \(unescaped: t) SELECT * FROM jsonb_populate_recordset(NULL::\(unescaped: t), \(json)::jsonb)",
        ]
    }

    /// Adds the rows the target does not have (by the table's key), keeping the ones it has.
    static func addRows(of table: RealmMoveTables.Copied, json: String) -> PQQuery {
        let t = PQQuery.quoteIdentifier(table.name)
        return "INSERT INTO \(unescaped: t) SELECT * FROM jsonb_populate_recordset(NULL::\(unescaped: t), \(json)::jsonb) ON CONFLICT DO NOTHING"
    }

    static func addJTIs(json: String) -> PQQuery {
        "INSERT INTO dpop_jtis SELECT * FROM jsonb_populate_recordset(NULL::dpop_jtis, \(json)::jsonb) ON CONFLICT DO NOTHING"
    }

    /// Whether the target holds any event in the moved positions' range (they travel unchanged).
    static func eventsWithin(_ low: Int64, _ high: Int64) -> PQQuery {
        "SELECT count(*) FROM (SELECT 1 FROM events WHERE position BETWEEN \(low) AND \(high) LIMIT 1) e"
    }

    /// Events of other realms in the range (a resumed move's own are allowed).
    static func foreignEventsWithin(_ low: Int64, _ high: Int64, realm: String) -> PQQuery {
        "SELECT count(*) FROM (SELECT 1 FROM events WHERE position BETWEEN \(low) AND \(high) AND realm <> \(realm) LIMIT 1) e"
    }

    /// Whether the cell holds the realm (its settings).
    static func holds(realm: String) -> PQQuery { "SELECT count(*) FROM realms WHERE realm_id = \(realm)" }

    /// Puts a new cell's positions 2^40 × its index apart from the others' (`modgud cell add`),
    /// so that a moved realm's positions, which travel unchanged, are free in any target.
    static func separatePositions(cellIndex: Int64) -> PQQuery {
        """
        SELECT setval(pg_get_serial_sequence('events', 'position'), (1::int8 << 40) * \(cellIndex))
        WHERE \(cellIndex) > 0
          AND coalesce((SELECT last_value FROM pg_sequences WHERE sequencename = 'events_position_seq'), 0) < (1::int8 << 40) * \(cellIndex)
        """
    }

    static let positionSequence: PQQuery = "SELECT last_value FROM pg_sequences WHERE sequencename = 'events_position_seq'"
    static func highestPosition(of realm: String, within window: Range<Int64>) -> PQQuery {
        "SELECT max(position) FROM events WHERE realm = \(realm) AND position >= \(window.lowerBound) AND position < \(window.upperBound)"
    }

    static func rebase(to position: Int64) -> PQQuery {
        "SELECT setval(pg_get_serial_sequence('events', 'position'), \(position))"
    }

    static func movedPositions(_ positions: [Int64]) -> PQQuery {
        "SELECT position FROM events WHERE position = ANY(\(positions)::int8[])"
    }

    /// Appends one run of moved events: their own positions (OVERRIDING SYSTEM VALUE), the
    /// target's transaction id (so its readers and projections see them as new).
    static func insertEvents(_ run: [RealmMoveEvent]) -> PQQuery {
        """
        INSERT INTO events (position, stream_id, stream_type, stream_version, realm, type, revision, payload, metadata, recorded_at)
        OVERRIDING SYSTEM VALUE
        SELECT * FROM unnest(\(run.map(\.position))::int8[], \(run.map(\.streamID))::text[], \(run.map(\.streamType))::text[],
            \(run.map(\.streamVersion))::int8[], \(run.map(\.realm))::text[], \(run.map(\.type))::text[], \(run.map(\.revision))::int4[],
            \(run.map { PQJSON($0.payload) })::jsonb[], \(run.map { PQJSON($0.metadata) })::jsonb[], \(run.map(\.recordedAt))::timestamptz[])
        ORDER BY 1
        """
    }

    /// The streams' versions after a run (the concurrency guard of the target's appends).
    static func advanceStreams(_ run: [RealmMoveEvent]) -> PQQuery {
        """
        INSERT INTO streams (id, type, realm, version)
        SELECT DISTINCT ON (id) id, type, realm, version
        FROM unnest(\(run.map(\.streamID))::text[], \(run.map(\.streamType))::text[], \(run.map(\.realm))::text[], \(run.map(\.streamVersion))::int8[])
            AS s (id, type, realm, version)
        ORDER BY id, version DESC
        ON CONFLICT (id) DO UPDATE SET version = greatest(streams.version, EXCLUDED.version), updated_at = now()
        """
    }


    // MARK: Staging database (on the target's cluster)

    /// The subscriber's table: `events` by name, without the identity (it takes the source's).
    static let stagingSchema: PQQuery = """
        CREATE TABLE IF NOT EXISTS events (
            position bigint PRIMARY KEY, tx_id xid8 NOT NULL, stream_id text NOT NULL, stream_type text NOT NULL,
            stream_version bigint NOT NULL, realm text NOT NULL, type text NOT NULL, revision integer NOT NULL,
            payload jsonb NOT NULL, metadata jsonb NOT NULL, recorded_at timestamptz NOT NULL)
        """

    static func subscriptionExists(_ name: String) -> PQQuery { "SELECT count(*) FROM pg_subscription WHERE subname = \(name)" }

    /// The subscription uses the slot the move made in the source (`createSlot`): CREATE
    /// SUBSCRIPTION cannot make its own slot when both databases are in one cluster
    /// (PostgreSQL 15, CREATE SUBSCRIPTION, Notes), and a cell may share a cluster with another.
    static func createSubscription(_ name: String, source: String) -> PQQuery {
        let n = PQQuery.quoteIdentifier(name)
        return """
            CREATE SUBSCRIPTION \(unescaped: n) CONNECTION \(unescaped: literal(source)) PUBLICATION \(unescaped: n)
            WITH (copy_data = true, create_slot = false, slot_name = \(unescaped: literal(name)))
            """
    }

    /// Detaches the slot before the drop (DROP SUBSCRIPTION, Notes): the move drops it in the
    /// source itself (`dropSlot`), which works whether or not both are in one cluster.
    static func dropSubscription(_ name: String) -> [PQQuery] {
        let n = PQQuery.quoteIdentifier(name)
        return [
            "ALTER SUBSCRIPTION \(unescaped: n) DISABLE",
            "ALTER SUBSCRIPTION \(unescaped: n) SET (slot_name = NONE)",
            "DROP SUBSCRIPTION \(unescaped: n)",
        ]
    }

    /// The initial copy's state: i (initialize), d (copying), f, s (synchronized), r (ready).
    static let copyState: PQQuery = "SELECT coalesce(min(srsubstate::text), '?') FROM pg_subscription_rel"

    /// Staged events below `horizon` (nil: all), in the source's log order.
    static func staged(below horizon: UInt64?, limit: Int) -> PQQuery {
        let bound: PQQuery = horizon.map { "WHERE tx_id < \(PQTransactionID($0))" } ?? ""
        return """
            SELECT position, tx_id, stream_id, stream_type, stream_version, realm, type, revision, payload::text, metadata::text,
                recorded_at::text, metadata->>'correlationID', metadata->>'causationID', metadata->>'actor', metadata->>'clientIP',
                metadata->>'userAgent'
            FROM events \(fragment: bound) ORDER BY tx_id, position LIMIT \(Int64(limit))
            """
    }

    static func unstage(_ positions: [Int64]) -> PQQuery { "DELETE FROM events WHERE position = ANY(\(positions)::int8[])" }
    static let stagedCount: PQQuery = "SELECT count(*) FROM events"
    static let ping: PQQuery = "SELECT 1"
    static let clearStaging: PQQuery = "TRUNCATE events"

    // MARK: Retirement (the source, after the flip)

    /// The audit log's append-only triggers (schema 0012), switched off only inside the
    /// retirement's transaction: the realm's log lives on in the cell it moved to.
    static func auditAppendOnly(enabled: Bool) -> [PQQuery] {
        RealmMoveTables.appendOnly.map {
            "ALTER TABLE \(unescaped: $0) \(unescaped: enabled ? "ENABLE" : "DISABLE") TRIGGER \(unescaped: $0)_append_only"
        }
    }

    static func deleteRows(of table: RealmMoveTables.Copied, realm: String) -> PQQuery {
        "DELETE FROM \(unescaped: PQQuery.quoteIdentifier(table.name)) WHERE \(fragment: ofRealm(table, realm))"
    }
}
