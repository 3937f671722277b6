#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import EmbeddedPostgres
import EventStorePostgres
import ModgudSchema
import PQ

/// A migrated database on a cluster of its own, which a test may stop and start again
/// (a database restart or outage) without disturbing the shared test cluster.
public final class RestartableDatabase: Sendable {
    public let cluster: EmbeddedPostgres
    public let url: String
    public let pool: PQPool

    /// - Parameter durable: commits wait for their WAL (a test that crashes the server and
    ///   expects a commit to survive); the default trades that for speed.
    ///   - settings: server settings (`wal_level=logical` for a cell a realm moves out of).
    public init(maxConnections: Int = 20, durable: Bool = false, settings: [String: String] = [:]) async throws {
        let folder = "/tmp/modgud-restartable-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        cluster = try EmbeddedPostgres(.init(dataDirectory: folder, database: "modgud", durable: durable, settings: settings))
        url = cluster.url
        pool = PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: maxConnections, acquireTimeout: .seconds(2)))
        _ = try await Migrator(pool: pool, migrations: ModgudSchema.migrations.map { .init(name: $0.name, sql: $0.sql) }).migrate()
    }

    /// Stops the server (fast shutdown: open sessions are ended, as in a restart).
    public func stop() throws {
        try cluster.stop()
    }

    /// Ends the server as a crash would: the next start runs crash recovery.
    public func crash() throws {
        try cluster.crash()
    }

    /// Starts it again on the same port.
    public func start() throws {
        try cluster.start()
    }

    /// Closes the pool, stops the server and deletes its folder.
    public func destroy() async {
        await pool.close()
        try? cluster.destroy()
    }
}
