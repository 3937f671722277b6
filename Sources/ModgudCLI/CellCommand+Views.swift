import ArgumentParser
import Foundation
import ModgudService

/// The operator's views across cells (issue 71, test (d)): each cell is asked on its own and the
/// answers are merged here. A cell that does not answer is named on standard error and the
/// command exits 1 after printing what the others gave: a partial answer is never silent.
extension CellCommand {
    struct Realms: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "realms", abstract: "Every realm of every cell: its cell, whether the directory places it there, its hosts.")
        @OptionGroup var directory: DirectoryOptions

        func run() async throws {
            let map = try await directory.read()
            var rows: [[String]] = []
            let unreachable = await CellCommand.eachCell(map) { cell, context in
                for realm in try await context.admin.realms.list() {
                    let placed = map.placements[realm.id].map { $0.cell == cell ? ($0.state == .moving ? "moving" : "here") : "in \($0.cell)" }
                    rows.append([realm.id, cell, placed ?? "unplaced", realm.hosts.joined(separator: ",")])
                }
            }
            print("REALM\tCELL\tPLACED\tHOSTS")
            for row in rows.sorted(by: { ($0[0], $0[1]) < ($1[0], $1[1]) }) { print(row.joined(separator: "\t")) }
            try CellCommand.report(unreachable)
        }
    }

    struct Audit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit", abstract: "A person's history in every realm of every cell, merged in time order (needs MODGUD_MASTER_KEY).")
        @OptionGroup var directory: DirectoryOptions
        @Argument(help: "Email address or user id.") var user: String

        func run() async throws {
            let map = try await directory.read()
            var lines: [(Date, [String])] = []
            let unreachable = await CellCommand.eachCell(map) { cell, context in
                for realm in try await context.admin.realms.list() {
                    guard let id = try await context.admin.users.find(realm: realm.id, user) else { continue }
                    for entry in try await context.admin.audit.userHistory(realm: realm.id, userID: id) {
                        let time = entry.recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false))
                        lines.append((entry.recordedAt, [time, cell, realm.id, entry.event, entry.detail, entry.actor ?? "-", entry.client ?? "-", entry.clientIP ?? "-"]))
                    }
                }
            }
            print("TIME\tCELL\tREALM\tEVENT\tDETAIL\tACTOR\tCLIENT\tIP")
            for line in lines.sorted(by: { $0.0 < $1.0 }) { print(line.1.joined(separator: "\t")) }
            try CellCommand.report(unreachable)
        }
    }

    /// Runs `body` with an admin context on every cell, in the directory's order; returns the
    /// cells that failed, with why.
    static func eachCell(_ map: CellMap, _ body: (String, AdminContext) async throws -> Void) async -> [(String, String)] {
        var failed: [(String, String)] = []
        for cell in map.cells {
            var database = DatabaseOptions()
            database.url = cell.databaseURL
            do {
                try await AdminContext.run(database) { try await body(cell.name, $0) }
            } catch {
                failed.append((cell.name, "\(error)"))
            }
        }
        return failed
    }

    /// Names every cell that did not answer on standard error, and fails the command if any.
    static func report(_ unreachable: [(String, String)]) throws {
        guard !unreachable.isEmpty else { return }
        for (cell, why) in unreachable { FileHandle.standardError.write(Data("cell \(cell) did not answer: \(why)\n".utf8)) }
        throw ExitCode(1)
    }
}
