import EventStorePostgres
import Logging
import PQ
import Synchronization

/// Runs the projection rebuilds operators start (issue 42), inside the service lifecycle:
/// `run` is the lifecycle service's body, every rebuild a child task of it, so a rebuild that
/// runs when the server stops is cancelled with it and awaited before the process ends (the
/// rebuild's copies are made again by the next rebuild). Tracks how far each has come; another
/// instance's rebuild is not seen here (the projection's status shows it held meanwhile).
public final class RebuildRunner: Sendable {
    /// How far a rebuild started here has come.
    public struct Progress: Sendable, Equatable {
        public var done: Int
        public var total: Int
        public var finished: Bool
        public var failure: String?
    }

    private struct Request: Sendable {
        var name: String
        var rebuild: @Sendable (@escaping @Sendable (Int, Int) -> Void) async throws -> Void
    }

    private let state = Mutex<[String: Progress]>([:])
    private let requests: AsyncStream<Request>
    private let continuation: AsyncStream<Request>.Continuation
    private let pool: PQPool
    private let logger = Logger(label: "modgud.rebuild")

    public init(pool: PQPool) {
        self.pool = pool
        (requests, continuation) = AsyncStream.makeStream(of: Request.self)
    }

    /// Queues a rebuild of `projection` unless one of it is running here; false when one is.
    public func start(_ projection: any SQLProjection) -> Bool {
        let name = projection.name
        let queued = state.withLock { running in
            if let current = running[name], !current.finished { return false }
            running[name] = Progress(done: 0, total: 0, finished: false)
            return true
        }
        guard queued else { return false }
        let pool = self.pool
        continuation.yield(Request(name: name) { report in
            _ = try await ProjectionRebuilder(pool: pool).rebuild(projection) { report($0.applied, $0.total) }
        })
        return true
    }

    public func progress(_ name: String) -> Progress? {
        state.withLock { $0[name] }
    }

    /// Takes queued rebuilds and runs each as a child task until cancelled (graceful
    /// shutdown); then cancels the running ones and returns when they have stopped.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await request in requests {
                group.addTask { await self.perform(request) }
            }
        }
    }

    /// Ends `run` once the queue is empty (tools and tests that started it themselves).
    public func finish() {
        continuation.finish()
    }

    private func perform(_ request: Request) async {
        let name = request.name
        logger.info("rebuild started", metadata: ["projection": "\(name)"])
        do {
            try await request.rebuild { done, total in self.state.withLock { $0[name] = Progress(done: done, total: total, finished: false) } }
            state.withLock { $0[name]?.finished = true }
            logger.info("rebuild finished", metadata: ["projection": "\(name)"])
        } catch {
            state.withLock { $0[name] = Progress(done: 0, total: 0, finished: true, failure: "\(error)") }
            logger.error("rebuild failed", metadata: ["projection": "\(name)", "error": "\(error)"])
        }
    }
}
