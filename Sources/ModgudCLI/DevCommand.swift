import ArgumentParser
import Dispatch
import EmbeddedPostgres
import EventStorePostgres
import Glibc
import Logging
import PQ

/// `modgud dev`: zero-setup development mode on a private PostgreSQL cluster.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run on a private PostgreSQL cluster in a project-local folder (no setup needed).")

    @Option(help: "Folder for the development cluster and keys.") var dataDir = ".modgud/dev"
    @Option(help: "PostgreSQL port (default: a free one, or the running cluster's).") var postgresPort: Int?

    func run() async throws {
        let cluster = try EmbeddedPostgres(.init(dataDirectory: absolute(dataDir) + "/postgres", port: postgresPort))
        let pool = PQPool(configuration: PQConfiguration(connectionString: cluster.url), options: .init(maxConnections: 8))
        let report = try await Migrator.product(pool: pool).migrate()
        print(
            """
            Modgud dev: PostgreSQL is running.
              database     \(cluster.url)
              data folder  \(absolute(dataDir))/postgres
              migrations   \(report.applied.count) applied now, \(report.alreadyApplied.count) already applied

            Try, in another terminal:
              export MODGUD_DATABASE_URL=\(cluster.url)
              modgud projections status
              modgud events replay

            The projection daemon is running. Ctrl-C stops it and the cluster.
            """)
        fflush(nil)
        let daemon = ProjectionDaemon(pool: pool, projections: ProjectionCatalog.asynchronous)
        let running = Task { try await daemon.run() }
        let signal = await Self.waitForTerminationSignal()
        print("\nreceived \(signal == SIGINT ? "SIGINT" : "SIGTERM"), stopping")
        running.cancel()
        _ = await running.result
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

    /// Suspends until SIGINT or SIGTERM arrives; returns which.
    static func waitForTerminationSignal() async -> Int32 {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        defer { sources.forEach { $0.cancel() } }
        for await number in signals { return number }
        return SIGTERM
    }
}
