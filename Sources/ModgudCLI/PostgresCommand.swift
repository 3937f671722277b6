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
        @Option(
            name: .customLong("setting"),
            help: "A server setting as name=value, repeatable: wal_level=logical on a cell realms move out of (docs/operations/cells.md).")
        var settings: [String] = []

        func open() throws -> EmbeddedPostgres {
            var parsed: [String: String] = [:]
            for setting in settings {
                let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("--setting takes name=value, not \(setting)") }
                parsed[parts[0]] = parts[1]
            }
            return try EmbeddedPostgres(.init(dataDirectory: dataDir, database: database, port: port, durable: true, settings: parsed))
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
