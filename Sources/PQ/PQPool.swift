import Synchronization

/// A bounded pool of connections with fair (first come, first served) waiting and a timeout.
///
/// Leasing and returning take a mutex, not an actor hop: the only thread switch on the
/// path of a statement is onto the connection's own thread. A connection that the server
/// dropped while idle reconnects itself on its next use (see `PQConnection`); one that
/// comes back broken is discarded and its slot reopened for the next caller. Leases
/// never nest: a caller that needs two connections at once can deadlock a full pool.
public final class PQPool: Sendable {
    /// Pool limits.
    public struct Options: Sendable {
        /// Most connections open at once.
        public var maxConnections: Int
        /// How long a caller waits for a free connection before `.poolTimeout`.
        public var acquireTimeout: Duration
        /// Told how long each caller that had to wait for a connection waited (metrics).
        public var waitObserver: (@Sendable (Duration) -> Void)?

        public init(maxConnections: Int = 16, acquireTimeout: Duration = .seconds(10), waitObserver: (@Sendable (Duration) -> Void)? = nil) {
            self.maxConnections = max(1, maxConnections)
            self.acquireTimeout = acquireTimeout
            self.waitObserver = waitObserver
        }
    }

    /// A caller waiting for a connection; resumed with one, or with nil meaning "open a new one".
    private struct Waiter {
        /// When the caller gives up (`acquireTimeout` after it began to wait).
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<PQConnection?, any Error>
    }

    private struct State {
        var idle: [PQConnection] = []
        var open = 0
        /// First come, first served: deadlines ascend.
        var waiters: [Waiter] = []
        /// Whether a sweeper is running (one per pool while anyone waits).
        var sweeping = false
        var closed = false
    }

    /// The server this pool connects to.
    public let configuration: PQConfiguration
    public let options: Options
    private let state = Mutex(State())

    public init(configuration: PQConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
    }

    /// Leases a connection for the duration of `body` and returns it to the pool afterwards.
    public func withConnection<T: Sendable>(_ body: (PQConnection) async throws -> T) async throws -> T {
        let connection = try await acquire()
        do {
            let value = try await body(connection)
            await release(connection)
            return value
        } catch {
            await release(connection)
            throw error
        }
    }

    /// Runs one statement on a pooled connection, by the calling task where it can
    /// (`PQConnection.queryInPlace`).
    @discardableResult
    public func query(_ query: PQQuery) async throws -> PQResult {
        try await withConnection { connection in try await connection.queryInPlace(query) }
    }

    /// Runs the statements in one pipeline on a pooled connection (one round trip, one implicit
    /// transaction), by the calling task where it can (`PQConnection.pipelineInPlace`); throws
    /// the first failing statement's `PQError`.
    public func pipeline(_ queries: [PQQuery]) async throws -> [PQResult] {
        do {
            return try await withConnection { connection in try await connection.pipelineInPlace(queries) }
        } catch let failure as PQPipelineError {
            throw failure.error
        }
    }

    /// Runs `body` in a transaction on a pooled connection.
    public func transaction<T: Sendable>(_ body: @Sendable (isolated PQConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try await connection.transaction(body) }
    }

    /// Whether a sweeper is timing out waiting callers (tests: it stops when nobody waits).
    var isSweeping: Bool { state.withLock { $0.sweeping } }

    /// Counts for monitoring: open connections, idle ones, callers waiting.
    public var statistics: (open: Int, idle: Int, waiting: Int) {
        state.withLock { ($0.open, $0.idle.count, $0.waiters.count) }
    }

    /// Closes idle connections and refuses new leases; leased ones close when returned.
    public func close() async {
        let (closing, waiting) = state.withLock { state in
            state.closed = true
            let closing = state.idle
            state.open -= closing.count
            state.idle.removeAll()
            let waiting = state.waiters
            state.waiters.removeAll()
            return (closing, waiting)
        }
        for waiter in waiting {
            waiter.continuation.resume(throwing: PQError(.closed, message: "the pool was closed"))
        }
        for connection in closing { await connection.close() }
    }

    // MARK: Leasing

    private enum Decision {
        case use(PQConnection)
        case open
        /// Wait; start the sweeper when none runs.
        case wait(startSweeper: Bool)
        case closed
    }

    func acquire() async throws -> PQConnection {
        // Fast path: an idle connection, no suspension.
        if let idle = state.withLock({ $0.closed ? nil : $0.idle.popLast() }) { return idle }
        let timeout = options.acquireTimeout
        let waitStarted = ContinuousClock.now
        let leased: PQConnection? = try await withCheckedThrowingContinuation { continuation in
            let decision = state.withLock { state -> Decision in
                if state.closed { return .closed }
                if let idle = state.idle.popLast() { return .use(idle) }
                if state.open < options.maxConnections {
                    state.open += 1
                    return .open
                }
                state.waiters.append(Waiter(deadline: waitStarted + timeout, continuation: continuation))
                let startSweeper = !state.sweeping
                state.sweeping = true
                return .wait(startSweeper: startSweeper)
            }
            switch decision {
            case .use(let connection): continuation.resume(returning: connection)
            case .open: continuation.resume(returning: nil)
            case .closed: continuation.resume(throwing: PQError(.closed, message: "the pool is closed"))
            case .wait(let startSweeper):
                if startSweeper { Task { await self.sweepExpiredWaiters() } }
            }
        }
        options.waitObserver?(ContinuousClock.now - waitStarted)
        if let leased { return leased }
        do {
            return try await PQConnection.connect(configuration)
        } catch {
            slotFreed()
            throw error
        }
    }

    /// Times out the callers that waited longer than `acquireTimeout`, until nobody waits.
    ///
    /// One task per pool, not one per waiting caller: a timeout task per wait lived the whole
    /// timeout (10 s) even after its caller was served, so under load the process held tens of
    /// thousands of sleeping tasks (an OTP run at 64 connections: 161 MB resident with 8 pool
    /// connections, 86 MB with 64; issue 49). A caller now times out within a quarter of the
    /// timeout (at most a second) after its deadline.
    private func sweepExpiredWaiters() async {
        let interval = max(.milliseconds(1), min(.seconds(1), options.acquireTimeout / 4))
        while true {
            try? await Task.sleep(for: interval)
            let now = ContinuousClock.now
            let (expired, done) = state.withLock { state -> ([Waiter], Bool) in
                let count = state.waiters.prefix { $0.deadline <= now }.count
                let expired = Array(state.waiters.prefix(count))
                state.waiters.removeFirst(count)
                if state.waiters.isEmpty { state.sweeping = false }
                return (expired, !state.sweeping)
            }
            for waiter in expired {
                waiter.continuation.resume(
                    throwing: PQError(.poolTimeout, message: "no database connection became free within \(options.acquireTimeout)"))
            }
            if done { return }
        }
    }

    func release(_ connection: PQConnection) async {
        var status = connection.stateAfterLastOperation
        if status == .inTransaction {
            await connection.rollbackQuietly()
            status = connection.stateAfterLastOperation
        }
        // Only a connection that is idle again goes back: one whose rollback failed is discarded.
        if status != .idle {
            await connection.close()
            slotFreed()
            return
        }
        let (waiter, discard) = state.withLock { state -> (Waiter?, Bool) in
            if state.closed {
                state.open -= 1
                return (nil, true)
            }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), false) }
            state.idle.append(connection)
            return (nil, false)
        }
        if discard { await connection.close() }
        waiter?.continuation.resume(returning: connection)
    }

    /// A slot was given up: let the longest waiter open a fresh connection in it.
    private func slotFreed() {
        let waiter = state.withLock { state -> Waiter? in
            if !state.waiters.isEmpty && !state.closed { return state.waiters.removeFirst() }
            state.open -= 1
            return nil
        }
        waiter?.continuation.resume(returning: nil)
    }
}
