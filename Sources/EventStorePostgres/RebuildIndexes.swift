import PQ

/// A rebuild's copy of an insert-only table (`SQLProjection.insertOnlyTables`) is created
/// without indexes and filled by the fold; this builds its live twin's key constraints and
/// indexes on it afterwards, once, from the catalogue (PostgreSQL's `LIKE … EXCLUDING INDEXES`
/// leaves them out, and nothing copies them later). A sort-built b-tree over a filled table
/// replaces one random descent per inserted row, which at tens of millions of rows and
/// indexes larger than `shared_buffers` is most of a rebuild's time.
enum RebuildIndexes {
    /// Copies `live`'s primary-key, unique and exclusion constraints (with their indexes) and
    /// every other index onto `fresh`. Both are quoted identifiers; PostgreSQL names the new
    /// indexes itself, as `LIKE … INCLUDING INDEXES` does.
    static func copy(from live: String, to fresh: String, on connection: isolated PQConnection) throws {
        let constraints = try connection.query(
            """
            SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
            WHERE c.conrelid = \(live)::regclass AND c.contype IN ('p', 'u', 'x') ORDER BY c.oid
            """)
        for row in constraints.rows {
            let definition = try row.decode(String.self, at: 0)
            try connection.query("ALTER TABLE \(unescaped: fresh) ADD \(unescaped: definition)")
        }
        let indexes = try connection.query(
            """
            SELECT pg_get_indexdef(i.indexrelid), i.indisunique FROM pg_index i
            WHERE i.indrelid = \(live)::regclass
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
            ORDER BY i.indexrelid
            """)
        for row in indexes.rows {
            let definition = try row.decode(String.self, at: 0)
            let unique = try row.decode(Bool.self, at: 1)
            guard let method = definition.range(of: " USING ") else { throw RebuildIndexError.unparsed(definition) }
            let tail = definition[method.lowerBound...]
            try connection.query("CREATE \(unescaped: unique ? "UNIQUE " : "")INDEX ON \(unescaped: fresh)\(unescaped: String(tail))")
        }
    }
}

/// An index definition from `pg_get_indexdef` that does not have the documented shape.
enum RebuildIndexError: Error, CustomStringConvertible {
    case unparsed(String)

    var description: String {
        switch self {
        case .unparsed(let definition): return "cannot copy index: \(definition)"
        }
    }
}
