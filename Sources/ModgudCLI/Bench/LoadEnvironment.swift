import Crypto
import EmbeddedPostgres
import EventStorePostgres
import Foundation
import ModgudService
import PQ

/// Where `modgud bench load` runs: a server (started here, or given by --url), its database
/// and the service layer on that database for preparing material.
struct LoadEnvironment {
    let fixtures: LoadFixtureSet
    let pool: PQPool
    let connection: LoadHTTPConnection
    let server: ServerProcess?
    let cluster: EmbeddedPostgres?
    let folder: String?
    /// The database the server uses (the floor server uses it too).
    var databaseURL: String?

    /// Counters at one moment; a report subtracts two.
    struct Sample {
        var database: DatabaseCounters
        /// The server's `/metrics` (one server: through a load balancer it is one instance's).
        var server: ServerMetrics?
        var roundTrips: Int? { server?.roundTrips }
        var serverCPUSeconds: Double?
        /// The server's threads' context switches (`ProcessCPU.contextSwitches`).
        var serverContextSwitches: Int?
        var databaseCPUSeconds: Double?
        /// This process: the load generator (and the preparation, which happens outside the runs).
        var generatorCPUSeconds: Double?
        var serverMemory: (resident: Int, peak: Int)?
    }

    static func open(_ command: LoadCommand) async throws -> LoadEnvironment {
        if let url = command.url {
            guard let parsed = URL(string: url), let host = parsed.host, let port = parsed.port else {
                throw CommandError("--url must be http://HOST:PORT")
            }
            let pool = PQPool(
                configuration: command.databaseURL.map { PQConfiguration(connectionString: $0) } ?? .fromEnvironment(),
                options: .init(maxConnections: 16))
            guard let masterKey = try ModgudConfiguration.fromEnvironment().masterKey else {
                throw CommandError("set MODGUD_MASTER_KEY to the server's key: the bench prepares codes the server must accept")
            }
            return LoadEnvironment(
                fixtures: try fixtures(pool: pool, masterKey: masterKey), pool: pool,
                connection: LoadHTTPConnection(host: host, port: port, authority: LoadFixtureSet.host), server: nil, cluster: nil, folder: nil,
                databaseURL: command.databaseURL ?? ProcessInfo.processInfo.environment["MODGUD_DATABASE_URL"])
        }
        let folder = command.dataDir + "/run-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let cluster = try EmbeddedPostgres(
            .init(
                dataDirectory: folder + "/postgres", durable: true,
                settings: ["shared_preload_libraries": "pg_stat_statements", "shared_buffers": command.sharedBuffers]))
        let pool = PQPool(configuration: PQConfiguration(connectionString: cluster.url), options: .init(maxConnections: 16))
        _ = try await Migrator.product(pool: pool).migrate()
        _ = try? await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        let masterKey = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let port = try EmbeddedPostgres.freePort()
        let server = try ServerProcess(
            port: port,
            environment: [
                "MODGUD_DATABASE_URL": cluster.url, "MODGUD_MASTER_KEY": Data(masterKey).base64EncodedString(), "MODGUD_HOST": "127.0.0.1",
                "MODGUD_PORT": String(port), "MODGUD_MAIL_TRANSPORT": "console", "MODGUD_ISSUER_SCHEME": "https", "MODGUD_DRAIN_SECONDS": "0",
                "MODGUD_DB_POOL_SIZE": String(command.poolSize), "MODGUD_TRUSTED_PROXIES": LoadCommand.loopback,
            ],
            logPath: folder + "/server.log")
        return LoadEnvironment(
            fixtures: try fixtures(pool: pool, masterKey: masterKey), pool: pool,
            connection: LoadHTTPConnection(host: "127.0.0.1", port: port, authority: LoadFixtureSet.host), server: server, cluster: cluster,
            folder: folder, databaseURL: cluster.url)
    }

    /// The same environment with the floor server (`modgud bench floor-server`) in the
    /// server's place, on the same database and loopback; its log beside the server's.
    func floor(poolSize: Int) async throws -> LoadEnvironment {
        guard let databaseURL else { throw CommandError("the floor needs the database: give --database-url") }
        let port = try EmbeddedPostgres.freePort()
        let log = (folder ?? FileManager.default.temporaryDirectory.path) + "/floor-\(getpid()).log"
        let floor = try ServerProcess(
            port: port, environment: ["MODGUD_DATABASE_URL": databaseURL, "MODGUD_PORT": String(port), "MODGUD_DB_POOL_SIZE": String(poolSize)],
            logPath: log, arguments: ["bench", "floor-server"])
        try await floor.waitUntilReady(path: "/floor/ready")
        return LoadEnvironment(
            fixtures: fixtures, pool: pool, connection: LoadHTTPConnection(host: "127.0.0.1", port: port, authority: "localhost"), server: floor,
            cluster: cluster, folder: nil, databaseURL: databaseURL)
    }

    /// The material's writers: the services of a composition on the server's database.
    private static func fixtures(pool: PQPool, masterKey: [UInt8]) throws -> LoadFixtureSet {
        let core = try ModgudCore(pool: pool, masterKey: masterKey)
        return LoadFixtureSet(
            admin: core.administration, clients: core.clientAuthenticator, tokens: core.tokenService, realms: core.realmDirectory,
            passkeyService: core.passkeys, fixtures: core.loadFixtures(), history: core.sessionHistory(),
            keys: core.keys)
    }

    /// Counters after PostgreSQL's statistics settled.
    func sample(perStatement: Bool) async throws -> Sample {
        let database = try await DatabaseCounters.settled(pool, perStatement: perStatement)
        var sample = Sample(database: database)
        sample.server = try? await connection.session { send in
            let reply = try await send(.GET, "/metrics", nil, "")
            return ServerMetrics(exposition: String(decoding: reply.body, as: UTF8.self))
        }
        sample.generatorCPUSeconds = ProcessCPU.seconds(pid: getpid())
        if let server {
            sample.serverCPUSeconds = ProcessCPU.seconds(pid: server.pid)
            sample.serverContextSwitches = ProcessCPU.contextSwitches(pid: server.pid)
            sample.serverMemory = server.memory
        }
        if let cluster, let text = try? String(contentsOfFile: cluster.dataDirectory + "/postmaster.pid", encoding: .utf8),
            let line = text.split(separator: "\n").first, let postmaster = Int32(line)
        {
            sample.databaseCPUSeconds = ProcessCPU.treeSeconds(root: postmaster)
        }
        return sample
    }

    /// Stops what was started; removes the run folder unless `keep`.
    func close(keep: Bool) async {
        server?.stop()
        await pool.close()
        if let cluster { try? cluster.stop() }
        if let folder {
            if keep { print("run folder kept: \(folder)") } else { try? FileManager.default.removeItem(atPath: folder) }
        }
    }
}
