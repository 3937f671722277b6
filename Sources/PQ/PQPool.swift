/// A bounded pool of connections with fair (first come, first served) waiting and a timeout.
///
/// A connection is checked for a server-side drop when it leaves the pool and discarded
/// when it comes back broken, so a backend killed by `pg_terminate_backend` or a restart
/// is replaced transparently for the next caller. Leases never nest: a caller that needs
/// two connections at once can deadlock a full pool, so don't.
public actor PQPool {
    /// Pool limits.
    public struct Options: Sendable {
        /// Most connections open at once.
        public var maxConnections: Int
        /// How long a caller waits for a free connection before `.poolTimeout`.
        public var acquireTimeout: Duration

        public init(maxConnections: Int = 16, acquireTimeout: Duration = .seconds(10)) {
            self.maxConnections = max(1, maxConnections)
            self.acquireTimeout = acquireTimeout
        }
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<PQConnection, any Error>
    }

    /// The server this pool connects to.
    public nonisolated let configuration: PQConfiguration
    public nonisolated let options: Options
    private var idle: [PQConnection] = []
    private var openCount = 0
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0
    private var isClosed = false

    public init(configuration: PQConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
    }

    /// Leases a connection for the duration of `body` and returns it to the pool afterwards.
    public nonisolated func withConnection<T: Sendable>(
        _ body: (PQConnection) async throws -> T
    ) async throws -> T {
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

    /// Runs one statement on a pooled connection.
    @discardableResult
    public nonisolated func query(_ query: PQQuery) async throws -> PQResult {
        try await withConnection { connection in try await connection.query(query) }
    }

    /// Runs `body` in a transaction on a pooled connection.
    public nonisolated func transaction<T: Sendable>(
        _ body: @Sendable (isolated PQConnection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in try await connection.transaction(body) }
    }

    /// Counts for monitoring: open connections, idle ones, callers waiting.
    public var statistics: (open: Int, idle: Int, waiting: Int) {
        (openCount, idle.count, waiters.count)
    }

    /// Closes idle connections and refuses new leases; leased ones close when returned.
    public func close() async {
        isClosed = true
        let closing = idle
        idle.removeAll()
        openCount -= closing.count
        for connection in closing { await connection.close() }
        let pending = waiters
        waiters.removeAll()
        for waiter in pending {
            waiter.continuation.resume(throwing: PQError(.closed, message: "the pool was closed"))
        }
    }

    // MARK: Leasing

    func acquire() async throws -> PQConnection {
        guard !isClosed else { throw PQError(.closed, message: "the pool is closed") }
        while let candidate = idle.popLast() {
            if await candidate.checkIdleHealth() { return candidate }
            openCount -= 1
            await candidate.close()
        }
        if openCount < options.maxConnections {
            openCount += 1
            do {
                return try await PQConnection.connect(configuration)
            } catch {
                openCount -= 1
                throw error
            }
        }
        let id = nextWaiterID
        nextWaiterID += 1
        let timeout = options.acquireTimeout
        return try await withCheckedThrowingContinuation { continuation in
            waiters.append(Waiter(id: id, continuation: continuation))
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.expireWaiter(id)
            }
        }
    }

    private func expireWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.continuation.resume(
            throwing: PQError(.poolTimeout, message: "no database connection became free within \(options.acquireTimeout)"))
    }

    func release(_ connection: PQConnection) async {
        if await connection.isBroken || isClosed {
            openCount -= 1
            await connection.close()
            replaceForWaiter()
            return
        }
        if await connection.isInTransaction {
            await connection.rollbackQuietly()
        }
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            waiter.continuation.resume(returning: connection)
        } else {
            idle.append(connection)
        }
    }

    /// A connection was discarded: open a fresh one for the longest waiter, if any.
    private func replaceForWaiter() {
        guard !waiters.isEmpty, openCount < options.maxConnections, !isClosed else { return }
        let waiter = waiters.removeFirst()
        openCount += 1
        let configuration = self.configuration
        Task {
            do {
                waiter.continuation.resume(returning: try await PQConnection.connect(configuration))
            } catch {
                self.connectFailed()
                waiter.continuation.resume(throwing: error)
            }
        }
    }

    private func connectFailed() {
        openCount -= 1
    }
}
