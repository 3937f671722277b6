import ArgumentParser
import EmbeddedPostgres

/// `modgud postgres`: the embedded PostgreSQL cluster on its own, for local multi-instance
/// setups (`ops/cluster`) that share one database: start, stop, restart.
struct PostgresCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres",
        abstract: "Run the embedded PostgreSQL cluster in a folder (loopback only).",
        subcommands: [Start.self, Stop.self])

    struct Location: ParsableArguments {
        @Option(help: "Folder of the cluster.") var dataDir: String
        @Option(help: "Port (default: a free one, or the running cluster's).") var port: Int?
        @Option(help: "Database to create.") var database = "modgud"

        func open() throws -> EmbeddedPostgres {
            try EmbeddedPostgres(.init(dataDirectory: dataDir, database: database, port: port, durable: true))
        }
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the cluster (initdb on first use); print its URL.")
        @OptionGroup var location: Location

        func run() throws {
            let cluster = try location.open()
            print(cluster.url)
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the cluster (fast shutdown: sessions are ended, as in a restart).")
        @OptionGroup var location: Location

        func run() throws {
            try location.open().stop()
        }
    }
}
