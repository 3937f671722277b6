import Metrics
import PQ
import Synchronization

/// Group commit across requests (issue 27; docs/decisions.md, "Group commit"): appends that
/// arrive while a commit runs are pipelined into the next one, so one transaction, one round
/// trip and one WAL flush carry many requests.
///
/// - Batches form by concurrency, never by waiting: an append that finds a free lane commits
///   at once (alone, when nothing else is queued); under load a batch is whatever queued while
///   the previous commit ran, at most `maxAppends`.
/// - Each append waits for the commit of its own batch, so an answer still means "durable".
/// - A batch is one implicit transaction (one Sync): the log's readers see it as one `tx_id`.
/// - When a statement fails, PostgreSQL has rolled the whole batch back, and libpq's pipeline
///   skips everything after the error up to the Sync, so a savepoint per append cannot
///   isolate it. Every append of that batch is then committed once more on its own: the one
///   at fault gets its own rejection from the database (a conflict, a single-use violation),
///   and its batch-mates are delayed by exactly that one retry.
/// - A lost connection fails every append of the batch, as it fails a lone append: whether
///   the commit happened is unknown, and a retry could write twice.
public final class AppendBatcher: Sendable {
    /// One append's statements and the caller waiting for their results.
    struct Pending: Sendable {
        var statements: [PQQuery]
        /// Orders a batch's appends by the stream they guard, so that two batches in flight
        /// take their stream rows' locks in the same order.
        var sortKey: String
        var continuation: CheckedContinuation<[PQResult], any Error>
    }

    private struct State {
        var queue: [Pending] = []
        var running = 0
    }

    /// How appends are committed.
    public struct Options: Sendable {
        /// Commits in flight at once, each on its own pool connection.
        public var lanes: Int
        /// The most appends one commit carries.
        public var maxAppends: Int

        public init(lanes: Int = 2, maxAppends: Int = 64) {
            self.lanes = max(1, lanes)
            self.maxAppends = max(1, maxAppends)
        }
    }

    private let pool: PQPool
    let options: Options
    private let state = Mutex(State())
    /// `modgud_event_append_batch_size`: appends per commit.
    private let batchSize = Recorder(label: "modgud_event_append_batch_size", aggregate: true)
    /// `modgud_event_append_batch_retries_total`: appends committed again alone after their batch failed.
    private let retries = Counter(label: "modgud_event_append_batch_retries_total")
    private let statistics = Mutex(AppendBatchStatistics())

    public init(pool: PQPool, options: Options) {
        self.pool = pool
        self.options = options
    }

    /// Runs one append's statements in a batch; returns their results, or throws its own failure.
    public func commit(_ statements: [PQQuery], sortKey: String) async throws -> [PQResult] {
        try await withCheckedThrowingContinuation { continuation in
            let startLane = state.withLock { state -> Bool in
                state.queue.append(Pending(statements: statements, sortKey: sortKey, continuation: continuation))
                guard state.running < options.lanes else { return false }
                state.running += 1
                return true
            }
            if startLane { Task { await self.drain() } }
        }
    }

    /// Commits so far by size (`/metrics` carries the same as a histogram).
    var snapshot: AppendBatchStatistics { statistics.withLock { $0 } }
    /// Appends waiting for a lane.
    var queued: Int { state.withLock { $0.queue.count } }

    /// One lane: commits what is queued until nothing is.
    private func drain() async {
        while let batch = next() {
            await run(batch)
        }
    }

    private func next() -> [Pending]? {
        state.withLock { state in
            guard !state.queue.isEmpty else {
                state.running -= 1
                return nil
            }
            let count = min(options.maxAppends, state.queue.count)
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return batch
        }
    }

    private func run(_ batch: [Pending]) async {
        batchSize.record(batch.count)
        statistics.withLock { $0.record(batch.count) }
        if batch.count == 1 {
            await alone(batch[0])
            return
        }
        let ordered = batch.sorted { $0.sortKey < $1.sortKey }
        do {
            let results = try await pool.withConnection { connection in
                try await connection.pipelineInPlace(ordered.flatMap(\.statements))
            }
            var offset = 0
            for pending in ordered {
                pending.continuation.resume(returning: Array(results[offset..<offset + pending.statements.count]))
                offset += pending.statements.count
            }
        } catch let failure as PQPipelineError where failure.index != nil && !failure.error.meansDatabaseUnavailable {
            // The batch rolled back: each append once more on its own, concurrently.
            retries.increment(by: batch.count)
            await withTaskGroup(of: Void.self) { group in
                for pending in ordered { group.addTask { await self.alone(pending) } }
            }
        } catch {
            for pending in ordered { pending.continuation.resume(throwing: error) }
        }
    }

    /// One append in a transaction of its own: its results, or its own failure.
    private func alone(_ pending: Pending) async {
        do {
            let results = try await pool.withConnection { connection in
                try await connection.pipelineInPlace(pending.statements)
            }
            pending.continuation.resume(returning: results)
        } catch {
            pending.continuation.resume(throwing: error)
        }
    }
}

/// How many commits carried how many appends.
public struct AppendBatchStatistics: Sendable, Equatable {
    /// Commits, by appends carried (index 0 holds batches of 1).
    public var commitsBySize: [Int] = []

    public var commits: Int { commitsBySize.reduce(0, +) }
    public var appends: Int { commitsBySize.enumerated().reduce(0) { $0 + ($1.offset + 1) * $1.element } }

    mutating func record(_ size: Int) {
        if commitsBySize.count < size { commitsBySize.append(contentsOf: repeatElement(0, count: size - commitsBySize.count)) }
        commitsBySize[size - 1] += 1
    }
}
