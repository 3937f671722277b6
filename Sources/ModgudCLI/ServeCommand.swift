import ArgumentParser
import EventStorePostgres
import ModgudHTTP
import Logging
import ModgudService
import PQ

/// `modgud serve`: the production server on a configured PostgreSQL.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve HTTP on MODGUD_HOST:MODGUD_PORT with MODGUD_DATABASE_URL (migrations are applied first).")

    func run() async throws {
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        let settings = try ModgudConfiguration.fromEnvironment()
        guard let masterKey = settings.masterKey else {
            throw CommandError("MODGUD_MASTER_KEY is required (32 bytes, base64): it seals the signing keys")
        }
        if let directory = settings.directory {
            try await CellServing.serve(directory: directory, settings: settings, masterKey: masterKey)
            return
        }
        let pool = PQPool(
            configuration: settings.database,
            options: .init(maxConnections: settings.poolSize, waitObserver: MetricsExposition.poolWaitObserver()))
        _ = try await DatabaseStartup.migrateWhenReachable(pool, logger: Logger(label: "modgud"))
        let core = try ModgudCore(pool: pool, masterKey: masterKey, groupCommit: settings.groupCommit, attestationRoots: settings.attestationRoots)
        if (try? await LegacySealer.pending(pool: pool)) == true {
            Logger(label: "modgud").warning(
                "events written before personal data was sealed hold addresses in plaintext: run `modgud privacy seal-legacy --apply`")
        }
        try await Server.run(
            core: core, settings: Self.serverSettings(settings), configuration: settings, mail: try settings.mailTransport(allowConsoleByDefault: false))
        await pool.close()
    }

    static func serverSettings(_ settings: ModgudConfiguration) -> Server.Settings {
        .init(
            host: settings.host, port: settings.port, issuerScheme: settings.issuerScheme, drain: settings.drain, limits: settings.limits,
            retention: settings.retention, addressRetention: settings.addressRetention)
    }
}
