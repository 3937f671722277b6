import ArgumentParser
import Foundation
import ModgudService
import Synchronization

extension RealmCommand {
    /// `modgud realm move REALM --to CELL` (issue 71, docs/operations/cells.md, "Moving a realm").
    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a realm to another cell while it serves: logical replication, a short fence (503), then the flip.",
            discussion: "The source cell needs wal_level=logical. Run it again after a failure: it resumes. The source keeps its copy, fenced, until `modgud realm retire`.")
        @OptionGroup var directory: CellCommand.DirectoryOptions
        @Argument var realm: String
        @Option(help: "The cell to move it to.") var to: String
        @Option(help: "Seconds the fence may hold before the move gives up and the realm stays where it is.") var fenceLimit = 30

        func run() async throws {
            let pool = try directory.makePool()
            defer { Task { await pool.close() } }
            do {
                var move = try await RealmMove.plan(realm: realm, to: to, directory: pool)
                move.fenceLimit = .seconds(fenceLimit)
                Swift.print("moving realm \(realm): cell \(move.source.name) → cell \(move.target.name)")
                let display = ProgressLine()
                let summary = try await move.run { display.show(Self.line($0)) }
                display.finish()
                Swift.print(
                    "moved realm \(realm) to cell \(to): \(summary.events) events, \(summary.copiedRows) rows of state; "
                        + "catch-up \(Self.seconds(summary.catchUp)) s, fence window \(Self.seconds(summary.fenceWindow)) s"
                        + (summary.rebasedTo.map { "; positions re-based to \($0)" } ?? ""))
            } catch let refusal as ServiceRefusal {
                throw CommandError(refusal.message)
            }
        }

        static func line(_ progress: RealmMove.Progress) -> String {
            let lag = progress.lagBytes.map { "\($0 / 1024) KiB" } ?? "-"
            let copy = ["i": "starting", "d": "copying", "f": "copied", "s": "synchronized", "r": "done"][progress.copyState] ?? progress.copyState
            return "\(progress.phase.rawValue): initial copy \(copy), staged \(progress.staged), moved \(progress.moved), lag \(lag)"
        }

        static func seconds(_ duration: Duration) -> String {
            String(format: "%.2f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
    }

    /// `modgud realm retire REALM --cell CELL`.
    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a cell's copy of a realm the directory places elsewhere (after a move, or an abandoned one).")
        @OptionGroup var directory: CellCommand.DirectoryOptions
        @Argument var realm: String
        @Option(help: "The cell to delete it from.") var cell: String

        func run() async throws {
            let pool = try directory.makePool()
            defer { Task { await pool.close() } }
            do {
                let rows = try await RealmRetirement.retire(realm: realm, cell: cell, directory: pool)
                Swift.print("realm \(realm) retired in cell \(cell): \(rows) rows deleted")
            } catch let refusal as ServiceRefusal {
                throw CommandError(refusal.message)
            }
        }
    }
}

/// One line that rewrites itself on a terminal, and prints each change on its own line otherwise.
final class ProgressLine: Sendable {
    private let terminal = isatty(STDOUT_FILENO) == 1
    private let last = Mutex<String>("")

    func show(_ line: String) {
        let changed = last.withLock { last in
            defer { last = line }
            return last != line
        }
        guard changed else { return }
        if terminal {
            Swift.print("\r\u{1B}[K" + line, terminator: "")
            fflush(nil)
        } else {
            Swift.print(line)
        }
    }

    func finish() {
        if terminal { print("") }
    }
}
