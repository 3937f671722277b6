import PQ

/// Applies forward-only SQL migrations in order and records what ran.
///
/// Idempotent: applied files are skipped. A file whose text changed after it was applied is
/// refused (fix forward with a new file instead). Each file runs in its own transaction with
/// its record; an advisory lock keeps two instances from migrating at once.
public struct Migrator: Sendable {
    /// One migration: a name (its file name) and SQL.
    public struct Migration: Sendable {
        public var name: String
        public var sql: String
        public init(name: String, sql: String) {
            self.name = name
            self.sql = sql
        }
    }

    /// What `migrate` did.
    public struct Report: Sendable, Equatable {
        public var applied: [String]
        public var alreadyApplied: [String]
        /// Recorded in the database but unknown to this binary (a newer version ran).
        public var unknown: [String]
    }

    let pool: PQPool
    public let migrations: [Migration]

    public init(pool: PQPool, migrations: [Migration]) {
        self.pool = pool
        self.migrations = migrations
    }

    /// Applies what is missing.
    /// - Throws: `MigrationError.changed` when an applied file's text differs from this binary's.
    public func migrate() async throws -> Report {
        let migrations = self.migrations
        return try await pool.withConnection { connection in
            try await connection.run { connection in
                try Self.migrate(migrations, on: connection)
            }
        }
    }

    /// The names of the migrations applied to the database (readiness compares them with the
    /// binary's).
    public static func appliedNames(pool: PQPool) async throws -> Set<String> {
        Set(try await pool.query("SELECT name FROM schema_migrations").rows.map { try $0.decode(String.self, at: 0) })
    }

    private static let lockKey: PQQuery = "SELECT pg_advisory_lock(hashtextextended('modgud.migrate', 0))"
    private static let unlockKey: PQQuery = "SELECT pg_advisory_unlock(hashtextextended('modgud.migrate', 0))"

    private static func migrate(_ migrations: [Migration], on connection: isolated PQConnection) throws -> Report {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                name       text PRIMARY KEY,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        try connection.query(lockKey)
        defer { _ = try? connection.query(unlockKey) }
        var recorded: [String: String] = [:]
        for row in try connection.query("SELECT name, checksum FROM schema_migrations").rows {
            recorded[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        var report = Report(applied: [], alreadyApplied: [], unknown: [])
        for migration in migrations.sorted(by: { $0.name < $1.name }) {
            let checksum = try connection.query(
                "SELECT encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex')"
            ).first!.decode(String.self, at: 0)
            if let existing = recorded.removeValue(forKey: migration.name) {
                guard existing == checksum else { throw MigrationError.changed(name: migration.name) }
                report.alreadyApplied.append(migration.name)
                continue
            }
            try connection.transaction { connection in
                try connection.execute(migration.sql)
                try connection.query(
                    "INSERT INTO schema_migrations (name, checksum) VALUES (\(migration.name), \(checksum))")
            }
            report.applied.append(migration.name)
        }
        report.unknown = recorded.keys.sorted()
        return report
    }
}

/// Why migrations could not be applied.
public enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// The file was applied before with different content.
    case changed(name: String)

    public var description: String {
        switch self {
        case .changed(let name):
            return "migration \(name) was already applied with different content; migrations are forward-only: add a new file instead"
        }
    }
}
