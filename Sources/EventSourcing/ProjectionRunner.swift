/// What one attempt to advance a projection achieved.
public enum ProjectionStep: Sendable, Equatable {
    /// Applied this many events (the batch may not have reached the end of the log).
    case applied(Int)
    /// Nothing new to apply.
    case caughtUp
    /// Another instance (or a rebuild) owns the projection right now.
    case busy
    /// The batch failed and was rolled back; the runner waits before trying again.
    case failed(String)
}

/// Advances projections in batches. The store behind it must make each batch and its
/// checkpoint one atomic step and must decide ownership across instances.
public protocol ProjectionWorker: Sendable {
    /// Applies the next batch of `projection`.
    func step(_ projection: String) async throws -> ProjectionStep
    /// Returns when new events may have arrived (a notification) or after `timeout`.
    func waitForEvents(timeout: Duration) async throws
}

/// The storage-agnostic loop of the projection daemon: drain every projection, then sleep
/// until woken by a notification or by the poll interval, until cancelled.
public struct ProjectionRunner: Sendable {
    public var worker: any ProjectionWorker
    public var projections: [String]
    /// The longest the runner sleeps without a notification.
    public var pollInterval: Duration
    /// Batches one projection may take in a row before the others get a turn.
    public var maxBatchesPerTurn: Int

    public init(worker: any ProjectionWorker, projections: [String], pollInterval: Duration = .seconds(1), maxBatchesPerTurn: Int = 20) {
        self.worker = worker
        self.projections = projections
        self.pollInterval = pollInterval
        self.maxBatchesPerTurn = maxBatchesPerTurn
    }

    /// Runs until the task is cancelled. A failing store never ends the loop: the error is
    /// reported to `onError` with the delay before the next try (backing off up to 5 s), so
    /// the daemon resumes on its own once the database is back.
    public func run(onError: @Sendable (any Error, Duration) -> Void = { _, _ in }) async {
        var backoff = RetryBackoff()
        while !Task.isCancelled {
            do {
                let moreWork = try await turn()
                backoff.reset()
                if !moreWork {
                    try await worker.waitForEvents(timeout: pollInterval)
                }
            } catch {
                if Task.isCancelled || error is CancellationError { return }
                let delay = backoff.nextDelay()
                onError(error, delay)
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// Gives every projection one turn; returns whether any of them may have more to do now.
    @discardableResult
    public func turn() async throws -> Bool {
        var moreWork = false
        for projection in projections {
            var batches = 0
            stepping: while batches < maxBatchesPerTurn {
                batches += 1
                switch try await worker.step(projection) {
                case .applied:
                    if batches == maxBatchesPerTurn { moreWork = true }
                case .caughtUp, .busy, .failed:
                    break stepping
                }
            }
        }
        return moreWork
    }

    /// Steps every projection until all report caught up (or busy / failed); for tests and rebuild tooling.
    /// - Returns: the total number of events applied.
    @discardableResult
    public func runUntilIdle() async throws -> Int {
        var total = 0
        for projection in projections {
            stepping: while true {
                switch try await worker.step(projection) {
                case .applied(let count): total += count
                case .caughtUp, .busy, .failed: break stepping
                }
            }
        }
        return total
    }
}
