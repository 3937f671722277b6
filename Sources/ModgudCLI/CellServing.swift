import EventSourcing
import EventStorePostgres
import Logging
import ModgudHTTP
import ModgudService
import PQ

/// `modgud serve` with `MODGUD_DIRECTORY_URL` (issue 71, docs/operations/cells.md): opens the
/// directory, then every cell it lists (a pool each, migrated), and serves them all. A cell
/// that does not answer at start is not waited for (`migrate`).
enum CellServing {
    /// What an instance serving cells follows: the directory's map, and the cells' hosts.
    struct Following: Sendable {
        let directory: CellDirectory
        let configuration: PQConfiguration
        let hosts: CellHostIndex
        let pools: [(name: String, pool: PQPool)]
    }

    static func serve(directory configuration: PQConfiguration, settings: ModgudConfiguration, masterKey: [UInt8]) async throws {
        let logger = Logger(label: "modgud")
        let directoryPool = PQPool(configuration: configuration, options: .init(maxConnections: 2))
        let directory = try await open(directoryPool, logger: logger)
        let map = directory.map
        guard !map.cells.isEmpty else {
            throw CommandError("the cell directory lists no cell: add one with `modgud cell add NAME --url URL` (docs/operations/cells.md)")
        }
        var cells: [(name: String, core: ModgudCore)] = []
        var pools: [(name: String, pool: PQPool)] = []
        for cell in map.cells {
            let pool = PQPool(
                configuration: PQConfiguration(connectionString: cell.databaseURL),
                options: .init(maxConnections: settings.poolSize, waitObserver: MetricsExposition.poolWaitObserver()))
            pools.append((cell.name, pool))
            cells.append(
                (cell.name, try ModgudCore(pool: pool, masterKey: masterKey, groupCommit: settings.groupCommit, attestationRoots: settings.attestationRoots)))
        }
        try await migrate(pools, logger: logger)
        let hosts = CellHostIndex()
        await hosts.refresh(cells: pools)
        let following = Following(directory: directory, configuration: configuration, hosts: hosts, pools: pools)
        try await Server.run(
            cells: cells, directory: following, settings: ServeCommand.serverSettings(settings), configuration: settings,
            mail: try settings.mailTransport(allowConsoleByDefault: false))
        for (_, pool) in pools { await pool.close() }
        await directoryPool.close()
    }

    /// Applies every cell's missing migrations, all at once. A cell that does not answer is not
    /// waited for: one cell down must not keep an instance from serving the others (a rolling
    /// restart during a cell's failover). Its migrations are applied in the background once it
    /// answers; until then its readiness says so and its realms fail on their own. A refusal
    /// retrying cannot fix (an edited migration) still ends the process, as with one database.
    static func migrate(_ pools: [(name: String, pool: PQPool)], logger: Logger) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, pool) in pools {
                group.addTask {
                    do {
                        _ = try await Migrator.product(pool: pool).migrate()
                        logger.info("cell opened", metadata: ["cell": "\(name)"])
                    } catch where PQError.meansDatabaseUnavailable(error) {
                        logger.warning(
                            "cell not reachable at start: serving the other cells, migrating it once it answers",
                            metadata: ["cell": "\(name)", "error": "\(error)"])
                        Task { _ = try? await DatabaseStartup.migrateWhenReachable(pool, logger: logger) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// The directory, once it answers: a directory in failover is waited for, not a reason to exit.
    private static func open(_ pool: PQPool, logger: Logger) async throws -> CellDirectory {
        var backoff = RetryBackoff(initial: .milliseconds(250), maximum: .seconds(5))
        while true {
            do {
                return try await CellDirectory(pool: pool)
            } catch where PQError.meansDatabaseUnavailable(error) {
                let delay = backoff.nextDelay()
                logger.warning("cell directory not reachable yet; retrying", metadata: ["error": "\(error)"])
                try await Task.sleep(for: delay)
            }
        }
    }
}
