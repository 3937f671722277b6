import ArgumentParser
import EventStorePostgres
import ModgudSchema
import PQ

/// `--database-url`, shared by every command that talks to PostgreSQL.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: "PostgreSQL URL. Default: MODGUD_DATABASE_URL, else the PG* environment variables.")
    var url: String?

    var configuration: PQConfiguration {
        if let url { return PQConfiguration(connectionString: url) }
        return PQConfiguration.fromEnvironment()
    }

    func makePool(maxConnections: Int = 8) -> PQPool {
        PQPool(configuration: configuration, options: .init(maxConnections: maxConnections))
    }
}

extension Migrator {
    /// The migrator for the product's embedded schema.
    static func product(pool: PQPool) -> Migrator {
        Migrator(pool: pool, migrations: ModgudSchema.migrations.map { .init(name: $0.name, sql: $0.sql) })
    }
}
