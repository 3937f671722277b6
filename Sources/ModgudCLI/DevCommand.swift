import ArgumentParser
import EmbeddedPostgres
import EventStorePostgres
import Glibc
import Logging
import ModgudService
import PQ

/// `modgud dev`: zero-setup development mode on a private PostgreSQL cluster.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run on a private PostgreSQL cluster in a project-local folder (no setup needed).")

    @Option(help: "Folder for the development cluster and keys.") var dataDir = ".modgud/dev"
    @Option(help: "PostgreSQL port (default: a free one, or the running cluster's).") var postgresPort: Int?
    @Option(help: "HTTP port.") var port = 8080

    func run() async throws {
        let folder = absolute(dataDir)
        let cluster = try EmbeddedPostgres(.init(dataDirectory: folder + "/postgres", port: postgresPort))
        let pool = PQPool(configuration: PQConfiguration(connectionString: cluster.url), options: .init(maxConnections: 16))
        let report = try await Migrator.product(pool: pool).migrate()
        let masterKey = try DevMasterKey.load(folder + "/master.key")
        let core = try ModgudCore(pool: pool, masterKey: masterKey)
        try await DevSeed.seed(core, port: port)
        print(
            """
            Modgud dev is running.
              http         http://localhost:\(port)  (realm "\(DevSeed.realmID)", public client "\(DevSeed.clientID)")
              database     \(cluster.url)
              data folder  \(folder)
              migrations   \(report.applied.count) applied now, \(report.alreadyApplied.count) already applied

            Try, in another terminal:
              curl -s http://localhost:\(port)/.well-known/openid-configuration
              curl -s http://localhost:\(port)/.well-known/jwks.json
              export MODGUD_DATABASE_URL=\(cluster.url)
              modgud projections status
              modgud events replay

            Ctrl-C stops the server, the projection daemon and the cluster.
            """)
        fflush(nil)
        do {
            try await Server.run(
                core: core, host: "127.0.0.1", port: port, issuerScheme: "http", adminToken: try ModgudConfiguration.fromEnvironment().adminToken)
        } catch {
            await pool.close()
            try cluster.stop()
            throw error
        }
        await pool.close()
        try cluster.stop()
    }

    private func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd + "/" + path
    }
}
