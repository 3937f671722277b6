import PQ

/// PostgreSQL's own counters, read before and after a load run: transactions
/// (`pg_stat_database`), WAL flushes and bytes (`pg_stat_wal`), and statements
/// (`pg_stat_statements`, when the extension is installed).
struct DatabaseCounters {
    var transactions: Int
    var walSyncs: Int
    var walBytes: Int
    var statements: Int?
    /// Calls and milliseconds spent executing, per statement text (with `--statements`).
    var calls: [String: StatementCost] = [:]

    /// What `pg_stat_statements` counts of one statement: calls, and the time its planner and
    /// executor spent (the rest of a backend's CPU is the protocol, commits and wake-ups).
    struct StatementCost {
        var calls: Int
        var milliseconds: Double
    }

    static func read(_ pool: PQPool, perStatement: Bool = false) async throws -> DatabaseCounters {
        let row = try await pool.query(
            """
            SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()),
                   (SELECT wal_sync FROM pg_stat_wal), (SELECT wal_bytes::int8 FROM pg_stat_wal),
                   EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')
            """
        ).first!
        var counters = DatabaseCounters(
            transactions: Int(try row.decode(Int64.self, at: 0)), walSyncs: Int(try row.decode(Int64.self, at: 1)),
            walBytes: Int(try row.decode(Int64.self, at: 2)))
        if try row.decode(Bool.self, at: 3) {
            counters.statements = Int(
                try await pool.query(
                    "SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                ).first!.decode(Int64.self, at: 0))
            if perStatement {
                for row in try await pool.query(
                    """
                    SELECT query, sum(calls)::int8, sum(total_plan_time + total_exec_time)::float8 FROM pg_stat_statements
                    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query
                    """
                ).rows {
                    counters.calls[try row.decode(String.self, at: 0)] = StatementCost(
                        calls: Int(try row.decode(Int64.self, at: 1)), milliseconds: try row.decode(Double.self, at: 2))
                }
            }
        }
        return counters
    }

    /// Backends publish their counters when idle, at most once a second: wait that out first.
    static func settled(_ pool: PQPool, perStatement: Bool = false) async throws -> DatabaseCounters {
        try await Task.sleep(for: .milliseconds(1_200))
        return try await read(pool, perStatement: perStatement)
    }
}
