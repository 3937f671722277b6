#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import EmbeddedPostgres
import EventStorePostgres
import ModgudSchema
import PQ

/// A fresh, migrated database for one test, on a real PostgreSQL server.
///
/// The server is `MODGUD_DATABASE_URL` when set; otherwise one embedded cluster is started
/// per test process in a throwaway folder (non-durable for speed) and stopped at exit.
/// Each test gets its own database copied from a migrated template, so tests never see
/// each other's rows.
public final class TestDatabase: Sendable {
    /// The database's URL (for a second pool: "another instance").
    public let url: String
    /// A pool on the database.
    public let pool: PQPool
    /// The database name.
    public let name: String

    private init(url: String, name: String, maxConnections: Int) {
        self.url = url
        self.name = name
        pool = PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: maxConnections))
    }

    /// Creates a database migrated with every file in `schema/`.
    public static func create(maxConnections: Int = 40) async throws -> TestDatabase {
        let server = try await TestServer.shared.ready()
        let name = "test_\(getpid())_\(TestServer.shared.nextNumber())"
        try await server.admin.query("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: server.template)")
        return TestDatabase(url: server.url(name), name: name, maxConnections: maxConnections)
    }

    /// Another pool on the same database, as a second service instance would have.
    public func makePool(maxConnections: Int = 20) -> PQPool {
        PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: maxConnections))
    }

    /// Closes the pool and drops the database.
    public func drop() async {
        await pool.close()
        let server = try? await TestServer.shared.ready()
        _ = try? await server?.admin.query("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)")
    }

    /// The URL of the server's maintenance database (for tests that need to act as a superuser).
    public static func adminPool() async throws -> PQPool {
        try await TestServer.shared.ready().admin
    }
}

/// The server shared by every test of the process.
final class TestServer: @unchecked Sendable {
    static let shared = TestServer()

    struct Ready: Sendable {
        let admin: PQPool
        let template: String
        let baseURL: @Sendable (String) -> String
        func url(_ database: String) -> String { baseURL(database) }
    }

    private let lock = NSLockish()
    private var counter = 0
    private var state: Task<Ready, any Error>?

    func nextNumber() -> Int {
        lock.withLock {
            counter += 1
            return counter
        }
    }

    func ready() async throws -> Ready {
        let task = lock.withLock { () -> Task<Ready, any Error> in
            if let state { return state }
            let started = Task { try await Self.start() }
            state = started
            return started
        }
        return try await task.value
    }

    private static func start() async throws -> Ready {
        let baseURL: @Sendable (String) -> String
        if let external = getenv("MODGUD_DATABASE_URL").map({ String(cString: $0) }), !external.isEmpty {
            baseURL = { database in PQConfiguration.replacingDatabase(in: external, with: database) }
        } else {
            let folder = "/tmp/modgud-test-\(getpid())"
            let cluster = try EmbeddedPostgres(.init(dataDirectory: folder, database: "postgres", durable: false))
            EmbeddedClusterAtExit.register(cluster)
            baseURL = { database in cluster.url(database: database) }
        }
        let admin = PQPool(configuration: PQConfiguration(connectionString: baseURL("postgres")), options: .init(maxConnections: 4))
        let template = "modgud_template_\(getpid())"
        try await admin.query("DROP DATABASE IF EXISTS \(identifier: template)")
        try await admin.query("CREATE DATABASE \(identifier: template)")
        let migrating = PQPool(configuration: PQConfiguration(connectionString: baseURL(template)), options: .init(maxConnections: 1))
        _ = try await Migrator(pool: migrating, migrations: ModgudSchema.migrations.map { .init(name: $0.name, sql: $0.sql) }).migrate()
        await migrating.close()
        return Ready(admin: admin, template: template, baseURL: baseURL)
    }
}

/// Stops the embedded test cluster when the test process exits.
enum EmbeddedClusterAtExit {
    nonisolated(unsafe) private static var cluster: EmbeddedPostgres?

    static func register(_ running: EmbeddedPostgres) {
        cluster = running
        atexit {
            try? EmbeddedClusterAtExit.cluster?.destroy()
        }
    }
}

/// A tiny mutex over pthread (FoundationEssentials has no NSLock).
final class NSLockish: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        return mutex
    }()

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
