import ArgumentParser
import EventStorePostgres
import ModgudService
import FoundationEssentials
import Glibc

struct ProjectionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "projections",
        abstract: "Inspect and rebuild read models.",
        subcommands: [List.self, Status.self, Rebuild.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the product's projections.")

        func run() async throws {
            for projection in ProjectionCatalog.all {
                print("\(projection.name)\t\(projection.mode.rawValue)\ttables: \(projection.tables.joined(separator: ", "))")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Checkpoint, lag and failures of each projection.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let pool = database.makePool(maxConnections: 2)
            print("NAME\tMODE\tCHECKPOINT\tAPPLIED\tLAG\tHELD-BY-OPEN-TX\tFAILING\tPARKED")
            for projection in ProjectionCatalog.all {
                let status = try await ProjectionStatus.read(projection, pool: pool)
                let checkpoint = status.mode == .inline ? "(inline)" : status.checkpoint?.description ?? "start"
                print(
                    "\(status.name)\t\(status.mode.rawValue)\t\(checkpoint)\t\(status.applied)\t\(status.lag)\t"
                        + "\(status.heldBehindOpenTransaction)\t\(status.failing)\t\(status.parked)")
            }
            await pool.close()
        }
    }

    struct Rebuild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild a projection from the whole log into fresh tables and swap them in.",
            discussion: "Refused while a daemon batch or another rebuild holds the projection; daemons skip it while it runs.")

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The projection's name (see `modgud projections list`).") var name: String

        func run() async throws {
            guard let projection = ProjectionCatalog.named(name) else {
                throw CommandError("no projection named \(name); see `modgud projections list`")
            }
            let pool = database.makePool(maxConnections: 2)
            let display = ProgressDisplay(label: name)
            let report = try await ProjectionRebuilder(pool: pool).rebuild(projection) { progress in
                display.show(done: progress.applied, total: progress.total)
            }
            display.finish()
            let rate = report.seconds > 0 ? Int(Double(report.events) / report.seconds) : report.events
            print("rebuilt \(name): \(report.events) events in \(String(describing: (report.seconds * 100).rounded() / 100)) s (\(rate) events/s)")
            await pool.close()
        }
    }
}

/// A one-line progress bar on a terminal; silent when output is not a terminal.
final class ProgressDisplay: @unchecked Sendable {
    private let label: String
    private let isTerminal = isatty(STDOUT_FILENO) == 1
    private var lastDrawn = -1

    init(label: String) { self.label = label }

    func show(done: Int, total: Int) {
        guard isTerminal else { return }
        let width = 30
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let percent = Int(fraction * 100)
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        print("\r\(label) [\(bar)] \(percent)% \(done)/\(total) events", terminator: "")
        fflush(nil)  // flushes every output stream, stdout included
    }

    func finish() {
        if isTerminal && lastDrawn >= 0 { print("") }
    }
}
