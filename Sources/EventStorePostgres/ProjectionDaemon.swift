import EventSourcing
import Logging
import PQ

/// The projection daemon of one instance: runs every asynchronous projection until cancelled,
/// woken by NOTIFY and by polling. Run one per instance; ownership is decided per batch.
public struct ProjectionDaemon: Sendable {
    public let worker: PostgresProjectionWorker
    public let runner: ProjectionRunner
    private let logger: Logger

    public init(
        pool: PQPool, projections: [any SQLProjection], pollInterval: Duration = .seconds(1), batchSize: Int = 500,
        maxAttempts: Int = 3, logger: Logger = Logger(label: "modgud.projections")
    ) {
        worker = PostgresProjectionWorker(
            pool: pool, projections: projections, batchSize: batchSize, maxAttempts: maxAttempts, logger: logger)
        runner = ProjectionRunner(worker: worker, projections: projections.map(\.name), pollInterval: pollInterval)
        self.logger = logger
    }

    /// Runs until the surrounding task is cancelled. An unreachable database is logged and
    /// retried with backoff; it never ends the daemon (nor, through it, the process).
    /// - Parameter onOutage: told of each failed try (tests observe the outage through it).
    public func run(onOutage: @escaping @Sendable (any Error, Duration) -> Void = { _, _ in }) async {
        let logger = self.logger
        await runner.run { error, delay in
            onOutage(error, delay)
            logger.warning(
                "projection daemon cannot reach the database; retrying",
                metadata: ["error": "\(error)", "retry_in_ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)"])
        }
        await worker.shutdown()
    }

    /// Applies everything currently admitted to the log, then returns the count (tests, tooling).
    @discardableResult
    public func catchUp() async throws -> Int {
        try await runner.runUntilIdle()
    }
}
