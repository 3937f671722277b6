import EventSourcing
import Logging
import PQ

/// The projection daemon of one instance: runs every asynchronous projection until cancelled,
/// woken by NOTIFY and by polling. Run one per instance; ownership is decided per batch.
public struct ProjectionDaemon: Sendable {
    public let worker: PostgresProjectionWorker
    public let runner: ProjectionRunner

    public init(
        pool: PQPool, projections: [any SQLProjection], pollInterval: Duration = .seconds(1), batchSize: Int = 500,
        maxAttempts: Int = 3, logger: Logger = Logger(label: "modgud.projections")
    ) {
        worker = PostgresProjectionWorker(
            pool: pool, projections: projections, batchSize: batchSize, maxAttempts: maxAttempts, logger: logger)
        runner = ProjectionRunner(worker: worker, projections: projections.map(\.name), pollInterval: pollInterval)
    }

    /// Runs until the surrounding task is cancelled.
    public func run() async throws {
        do {
            try await runner.run()
        } catch {
            await worker.shutdown()
            throw error
        }
        await worker.shutdown()
    }

    /// Applies everything currently admitted to the log, then returns the count (tests, tooling).
    @discardableResult
    public func catchUp() async throws -> Int {
        try await runner.runUntilIdle()
    }
}
