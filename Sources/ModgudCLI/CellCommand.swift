import ArgumentParser
import Foundation
import EventStorePostgres
import ModgudService
import PQ

/// `modgud cell`: the cell directory (issue 71, docs/operations/cells.md).
struct CellCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cell", abstract: "Cells: the PostgreSQL groups realms live in, and the directory that places them.",
        subcommands: [Add.self, List.self, Place.self, Realms.self, Audit.self])

    /// `--directory-url`, default `MODGUD_DIRECTORY_URL`.
    struct DirectoryOptions: ParsableArguments {
        @Option(name: .customLong("directory-url"), help: "The cell directory's PostgreSQL URL. Default: MODGUD_DIRECTORY_URL.")
        var url: String?

        func makePool() throws -> PQPool {
            guard let url = url ?? ProcessInfo.processInfo.environment["MODGUD_DIRECTORY_URL"], !url.isEmpty else {
                throw CommandError("name the cell directory: --directory-url or MODGUD_DIRECTORY_URL")
            }
            return PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: 2))
        }

        /// The directory's map, read now.
        func read() async throws -> CellMap {
            let pool = try makePool()
            defer { Task { await pool.close() } }
            return try await CellDirectory.read(pool: pool)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a cell (or change its URL); its schema is migrated first. Instances open it when they start.")
        @OptionGroup var directory: DirectoryOptions
        @Argument(help: "The cell's name: lower-case letters, digits and dashes.") var name: String
        @Option(help: "The cell's PostgreSQL URL (a pg_auto_failover formation's, with target_session_attrs=read-write).") var url: String

        func run() async throws {
            let cell = PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: 2))
            let report = try await Migrator.product(pool: cell).migrate()
            let pool = try directory.makePool()
            try await CellDirectory.migrate(pool: pool)
            let cells = try await CellDirectory.read(pool: pool).cells
            try await RealmMove.separatePositions(ofCellAt: cells.firstIndex { $0.name == name } ?? cells.count, pool: cell)
            await cell.close()
            try await CellDirectory.addCell(name: name, databaseURL: url, pool: pool)
            await pool.close()
            print("cell \(name) added (\(report.applied.count) migrations applied)")
        }
    }

    struct Place: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "place", abstract: "Say which cell serves a realm; every instance routes by it at once (NOTIFY) or within 5 s (poll).")
        @OptionGroup var directory: DirectoryOptions
        @Argument var realm: String
        @Option(help: "The cell that serves it.") var cell: String

        func run() async throws {
            let pool = try directory.makePool()
            defer { Task { await pool.close() } }
            do {
                try await CellDirectory.place(realm: realm, cell: cell, pool: pool)
            } catch let refusal as ServiceRefusal {
                throw CommandError(refusal.message)
            }
            print("realm \(realm) placed in cell \(cell)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "The cells, each with its health (reachable, primary), the realms it holds and those placed in it.")
        @OptionGroup var directory: DirectoryOptions

        func run() async throws {
            print("CELL\tHEALTH\tHELD\tPLACED\tURL")
            for cell in await CellHealth.statuses(of: try await directory.read()) {
                let held = cell.held.map { $0.isEmpty ? "-" : $0.joined(separator: ",") } ?? "?"
                let placed = cell.placed.isEmpty ? "-" : cell.placed.joined(separator: ",")
                print("\(cell.name)\t\(cell.health)\t\(held)\t\(placed)\t\(CellHealth.redacted(cell.databaseURL))")
            }
        }
    }
}
