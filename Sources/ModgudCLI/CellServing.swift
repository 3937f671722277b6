import EventSourcing
import EventStorePostgres
import Logging
import ModgudHTTP
import ModgudService
import PQ

/// `modgud serve` with `MODGUD_DIRECTORY_URL` (issue 71, docs/operations/cells.md): opens the
/// directory, then every cell it lists (a pool each, migrated), and serves them all.
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
            _ = try await DatabaseStartup.migrateWhenReachable(pool, logger: logger)
            cells.append(
                (cell.name, try ModgudCore(pool: pool, masterKey: masterKey, groupCommit: settings.groupCommit, attestationRoots: settings.attestationRoots)))
            logger.info("cell opened", metadata: ["cell": "\(cell.name)"])
        }
        let hosts = CellHostIndex()
        await hosts.refresh(cells: pools)
        let following = Following(directory: directory, configuration: configuration, hosts: hosts, pools: pools)
        try await Server.run(
            cells: cells, directory: following, settings: ServeCommand.serverSettings(settings), configuration: settings,
            mail: try settings.mailTransport(allowConsoleByDefault: false))
        for (_, pool) in pools { await pool.close() }
        await directoryPool.close()
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
