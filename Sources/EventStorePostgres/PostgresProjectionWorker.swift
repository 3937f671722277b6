import EventSourcing
import Logging
import PQ

/// Advances asynchronous SQL projections, one atomic batch at a time, safely across instances.
///
/// A batch is one transaction: take the projection's transaction-scoped advisory lock
/// (another instance holding it means "busy", not "wait"), read the checkpoint, read the next
/// events gap-safely, apply their statements and move the checkpoint, commit. Output and
/// checkpoint commit together, so every event is applied exactly once however many daemons
/// run. When a batch fails, it is replayed one event per transaction to find the event at
/// fault (the ones before it are applied); that event is retried on later turns, and after
/// `maxAttempts` it is parked in `projection_failures` and skipped, and the projection
/// carries on.
public actor PostgresProjectionWorker: ProjectionWorker {
    let pool: PQPool
    public let projections: [String: any SQLProjection]
    public let batchSize: Int
    public let maxAttempts: Int
    private let listener: NotificationListener
    private var parked: [String: Set<Int64>] = [:]
    private var parkedLoaded: Set<String> = []
    private let logger: Logger

    public init(
        pool: PQPool, projections: [any SQLProjection], batchSize: Int = 500, maxAttempts: Int = 3,
        logger: Logger = Logger(label: "modgud.projections")
    ) {
        precondition(projections.allSatisfy { $0.mode == .async }, "the daemon runs asynchronous projections only")
        self.pool = pool
        self.projections = Dictionary(uniqueKeysWithValues: projections.map { ($0.name, $0) })
        self.batchSize = batchSize
        self.maxAttempts = maxAttempts
        self.listener = NotificationListener(configuration: pool.configuration, channel: EventStoreSQL.channel)
        self.logger = logger
    }

    public func waitForEvents(timeout: Duration) async throws {
        await listener.wait(timeout: timeout)
    }

    /// Closes the listening connection.
    public func shutdown() async {
        await listener.close()
    }

    public func step(_ name: String) async throws -> ProjectionStep {
        guard let projection = projections[name] else { return .failed("unknown projection \(name)") }
        if !parkedLoaded.contains(name) {
            let rows = try await pool.query(EventStoreSQL.parkedPositions(name)).rows
            parked[name] = Set(try rows.map { try $0.decode(Int64.self, at: 0) })
            parkedLoaded.insert(name)
        }
        switch try await applyBatch(projection, limit: batchSize) {
        case .applied(let count, _): return .applied(count)
        case .caughtUp: return .caughtUp
        case .busy: return .busy
        case .eventFailed(let event, let reason): return try await recordFailure(of: event, in: name, reason: reason)
        case .batchFailed:
            // Replay the batch one event per transaction: events before the faulty one are
            // applied, and the faulty one is identified and counted.
            var applied = 0
            for _ in 0..<batchSize {
                switch try await applyBatch(projection, limit: 1) {
                case .applied(let count, _): applied += count
                case .caughtUp, .busy: return applied > 0 ? .applied(applied) : .caughtUp
                case .eventFailed(let event, let reason):
                    return try await recordFailure(of: event, in: name, reason: reason)
                case .batchFailed(let reason): return .failed(reason)
                }
            }
            return .applied(applied)
        }
    }

    private func applyBatch(_ projection: any SQLProjection, limit: Int) async throws -> BatchApplier.Outcome {
        let skip = parked[projection.name] ?? []
        return try await pool.withConnection { connection in
            try await connection.run { connection in
                try BatchApplier.applyNextBatch(
                    projection, on: connection, tables: .live(projection), skipping: skip, limit: limit,
                    lock: .transaction, gapSafe: true)
            }
        }
    }

    private func recordFailure(of event: RecordedEvent, in name: String, reason: String) async throws -> ProjectionStep {
        let result = try await pool.query(
            EventStoreSQL.recordFailure(name, event: event, error: reason, parkAfter: maxAttempts))
        let isParked = try result.first?.decode(Bool.self, at: 0) ?? false
        let attempts = try result.first?.decode(Int.self, at: 1) ?? 0
        if isParked {
            parked[name, default: []].insert(event.position)
            logger.error(
                "projection event parked",
                metadata: ["projection": "\(name)", "position": "\(event.position)", "type": "\(event.type)", "error": "\(reason)"])
        } else {
            logger.warning(
                "projection event failed",
                metadata: ["projection": "\(name)", "position": "\(event.position)", "attempt": "\(attempts)", "error": "\(reason)"])
        }
        return .failed(reason)
    }
}
