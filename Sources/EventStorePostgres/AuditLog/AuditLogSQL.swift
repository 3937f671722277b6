import EventSourcing
import PQ
import TransparencyLog

/// Every statement over the audit log's tables (`audit_leaves`, `audit_nodes`,
/// `audit_tree_heads`, `audit_checkpoints`, `audit_redactions`): their one home.
enum AuditLogSQL {
    /// The integrator's cursor lives among the projections' checkpoints under this name.
    static let cursorName = "audit_log"

    /// The next events after the cursor, gap-safe as every log reader (docs/architecture.md,
    /// "The gap problem"), with the columns a leaf covers.
    static func events(after cursor: LogCursor, limit: Int) -> PQQuery {
        """
        SELECT e.tx_id, \(unescaped: AuditLeaf.columns) FROM events e
        WHERE (e.tx_id, e.position) > (\(PQTransactionID(cursor.transactionID)), \(cursor.position))
          AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx_id, e.position
        LIMIT \(limit)
        """
    }

    static func heads(_ realms: [String]) -> PQQuery {
        "SELECT realm, tree_size FROM audit_tree_heads WHERE realm = ANY(\(realms))"
    }

    static func head(_ realm: String) -> PQQuery {
        "SELECT tree_size FROM audit_tree_heads WHERE realm = \(realm)"
    }

    /// The stored hashes of the given perfect subtrees of one realm (level 0: the leaves).
    /// Written as lookups per wanted node, so the plan is an index probe each however the
    /// tables' statistics stood when the statement was prepared (a plan cached while the
    /// tables were small scanned them whole as they grew).
    static func nodes(realm: String, _ nodes: [TreeNode]) -> PQQuery {
        """
        SELECT w.level, w.node_index, coalesce(l.hash, n.hash)
        FROM unnest(\(nodes.map { Int64($0.level) })::int8[], \(nodes.map(\.index))::int8[]) AS w (level, node_index)
        LEFT JOIN LATERAL (SELECT hash FROM audit_leaves WHERE realm = \(realm) AND leaf_index = w.node_index AND w.level = 0) l ON true
        LEFT JOIN LATERAL (SELECT hash FROM audit_nodes WHERE realm = \(realm) AND level = w.level AND node_index = w.node_index AND w.level > 0) n ON true
        WHERE coalesce(l.hash, n.hash) IS NOT NULL
        """
    }

    static func insertLeaves(realms: [String], indexes: [Int64], positions: [Int64], hashes: [String]) -> PQQuery {
        """
        INSERT INTO audit_leaves (realm, leaf_index, position, hash)
        SELECT r, i, p, decode(h, 'hex') FROM unnest(\(realms)::text[], \(indexes)::int8[], \(positions)::int8[], \(hashes)::text[]) AS t (r, i, p, h)
        """
    }

    static func insertNodes(realms: [String], levels: [Int64], indexes: [Int64], hashes: [String]) -> PQQuery {
        """
        INSERT INTO audit_nodes (realm, level, node_index, hash)
        SELECT r, l, i, decode(h, 'hex') FROM unnest(\(realms)::text[], \(levels)::int8[], \(indexes)::int8[], \(hashes)::text[]) AS t (r, l, i, h)
        """
    }

    static func saveHeads(realms: [String], sizes: [Int64]) -> PQQuery {
        """
        INSERT INTO audit_tree_heads (realm, tree_size, updated_at)
        SELECT r, s, now() FROM unnest(\(realms)::text[], \(sizes)::int8[]) AS t (r, s)
        ON CONFLICT (realm) DO UPDATE SET tree_size = EXCLUDED.tree_size, updated_at = now()
        """
    }

    /// Realms with leaves no checkpoint covers: size, the latest checkpoint's size, and its
    /// age in seconds (null when the realm has none).
    static let uncheckpointed: PQQuery = """
        SELECT h.realm, h.tree_size, c.tree_size, extract(epoch FROM now() - c.signed_at)::float8
        FROM audit_tree_heads h
        LEFT JOIN LATERAL (
            SELECT tree_size, signed_at FROM audit_checkpoints c WHERE c.realm = h.realm ORDER BY tree_size DESC LIMIT 1
        ) c ON true
        WHERE h.tree_size > coalesce(c.tree_size, 0)
        """

    static func insertCheckpoint(realm: String, size: Int64, root: [UInt8], note: String) -> PQQuery {
        """
        INSERT INTO audit_checkpoints (realm, tree_size, root_hash, signed_at, note)
        VALUES (\(realm), \(size), \(PQBytes(root)), now(), \(note))
        ON CONFLICT (realm, tree_size) DO NOTHING
        """
    }

    static func latestCheckpoint(_ realm: String) -> PQQuery {
        "SELECT tree_size, note FROM audit_checkpoints WHERE realm = \(realm) ORDER BY tree_size DESC LIMIT 1"
    }

    static func checkpoints(_ realm: String) -> PQQuery {
        "SELECT tree_size, note FROM audit_checkpoints WHERE realm = \(realm) ORDER BY tree_size"
    }

    static func position(realm: String, index: Int64) -> PQQuery {
        "SELECT position FROM audit_leaves WHERE realm = \(realm) AND leaf_index = \(index)"
    }

    static func leaf(position: Int64) -> PQQuery {
        "SELECT realm, leaf_index, hash FROM audit_leaves WHERE position = \(position)"
    }

    /// Leaves from `index` on with the events they were made of (all nulls when the row is
    /// gone): an index probe into `events` per leaf, whatever the statistics say.
    static func leavesWithEvents(realm: String, from index: Int64, limit: Int) -> PQQuery {
        """
        SELECT l.leaf_index, l.position, l.hash, e.position IS NOT NULL, \(unescaped: AuditLeaf.columns)
        FROM (SELECT leaf_index, position, hash FROM audit_leaves WHERE realm = \(realm) AND leaf_index >= \(index)
              ORDER BY leaf_index LIMIT \(limit)) l
        LEFT JOIN LATERAL (SELECT * FROM events WHERE position = l.position) e ON true
        ORDER BY l.leaf_index
        """
    }

    static func redactions(realm: String, positions: [Int64]) -> PQQuery {
        """
        SELECT position, kind, new_hash, operation FROM audit_redactions
        WHERE realm = \(realm) AND position = ANY(\(positions)) ORDER BY at
        """
    }

    /// The first event of the realm the integrator has passed that is not a leaf: one
    /// written into the past, below the cursor.
    static func firstEventMissingFromTheLog(realm: String) -> PQQuery {
        """
        SELECT e.position FROM events e, checkpoints c
        WHERE c.projection = \(cursorName) AND e.realm = \(realm) AND (e.tx_id, e.position) <= (c.tx_id, c.position)
          AND NOT EXISTS (SELECT 1 FROM audit_leaves l WHERE l.position = e.position)
        ORDER BY e.position LIMIT 1
        """
    }

    static func redact(_ rows: [AuditRedaction], operation: String) -> PQQuery {
        """
        INSERT INTO audit_redactions (position, realm, kind, new_hash, operation)
        SELECT p, r, k, nullif(decode(h, 'hex'), ''::bytea), \(operation)
        FROM unnest(\(rows.map(\.position))::int8[], \(rows.map(\.realm))::text[], \(rows.map(\.kind.rawValue))::text[],
                    \(rows.map { $0.newHash.map(PQHex.encode) ?? "" })::text[]) AS t (p, r, k, h)
        """
    }
}
