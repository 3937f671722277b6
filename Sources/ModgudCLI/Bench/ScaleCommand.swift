import ArgumentParser
import EventStorePostgres
import Foundation
import ModgudService
import PQ

/// `modgud bench scale` (issue 70): what a refresh costs as the log grows, and how long the
/// operator's whole-log work (a projection rebuild, an audit verification) takes at that size.
struct ScaleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Fill a realm to each size of log; at each, print refresh/s and p99, rebuild and audit-verify times, and the size on disk.",
        discussion: """
            Starts the same private durable PostgreSQL and `modgud serve` child as `bench load`. The fill is a realistic \
            mix: users created and signed in through the services (`bench load`'s fixtures), every session aged by \
            --rotations refreshes (`SessionHistory`: decided by the token family's own decide and appended through the \
            store's append, inline projections included, many families to a transaction), and one passkey enrolment per \
            --passkey-every users. At each size it waits for the server's audit log integrator to catch up, measures \
            refresh as `bench load` does, rebuilds every projection, verifies the realm's audit log, and lists the \
            largest tables. Build with -c release (BENCHMARKS.md, "Cost against log size").
            """)

    @Option(help: "Sizes of the log to measure at, in events, comma-separated, ascending.") var events = "1000000"
    @Option(help: "Refreshes per session in the fill.") var rotations = 40
    @Option(help: "Users per fill step (each signs in once).") var step = 500
    @Option(help: "One passkey enrolment per this many users.") var passkeyEvery = 10
    @Option(help: "Concurrent keep-alive connections of the refresh measurement.") var connections = 32
    @Option(help: "Seconds of each refresh measurement.") var seconds = 8.0
    @Option(help: "Folder for the embedded cluster (a run folder inside is removed afterwards).") var dataDir = "/var/tmp/modgud-bench"
    @Option(help: "shared_buffers of the started PostgreSQL (default: PostgreSQL's own; a large store wants its token indexes in it).")
    var sharedBuffers = "128MB"
    @Flag(help: "Skip the projection rebuilds (their time grows with the log).") var noRebuild = false
    @Flag(help: "Keep the run folder (the filled cluster and the server's log) for measurements of its own.") var keep = false

    func run() async throws {
        let sizes = try events.split(separator: ",").map { text in
            guard let size = Int(text), size > 0 else { throw ValidationError("--events takes positive numbers") }
            return size
        }
        let load = try LoadCommand.parse([
            "--scenarios", "refresh", "--connections", String(connections), "--seconds", String(seconds), "--data-dir", dataDir,
            "--shared-buffers", sharedBuffers,
        ])
        let environment = try await LoadEnvironment.open(load)
        do {
            var fixtures = environment.fixtures
            try await fixtures.prepareRealm()
            if let server = environment.server { try await server.waitUntilReady() }
            let scale = ScaleRun(command: self, load: load, environment: environment, fixtures: fixtures)
            ScaleRun.emit("modgud bench scale — refresh at \(connections) connections for \(seconds) s per size; \(rotations) rotations per session")
            try await scale.measure(label: "empty")
            for size in sizes {
                try await scale.fill(to: size)
                try await scale.measure(label: "\(size)")
            }
        } catch {
            await environment.close(keep: true)
            throw error
        }
        await environment.close(keep: keep)
    }
}
