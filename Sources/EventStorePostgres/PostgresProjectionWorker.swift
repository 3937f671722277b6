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

/// Applies one batch of the log to a projection's tables, on one connection.
enum BatchApplier {
    enum Lock {
        /// Take the transaction-scoped advisory lock; report busy if another holds it.
        case transaction
        /// The caller already holds the session-scoped lock (a rebuild).
        case heldBySession
    }

    enum Outcome: Sendable {
        case applied(Int, last: LogCursor)
        case caughtUp
        case busy
        /// One event's statements failed (or could not be produced).
        case eventFailed(RecordedEvent, String)
        /// The statements of a batch of several events failed: which event is at fault is unknown.
        case batchFailed(String)
    }

    /// One transaction: lock, read checkpoint (or use `from`), read events, apply, save checkpoint, commit.
    /// - Parameters:
    ///   - from: the cursor to continue from; nil reads the projection's checkpoint row.
    ///   - saveCheckpoint: whether to move the projection's checkpoint (false while rebuilding).
    static func applyNextBatch(
        _ projection: any SQLProjection, on connection: isolated PQConnection, tables: ProjectionTables, skipping parked: Set<Int64>,
        limit: Int, lock: Lock, gapSafe: Bool, from: LogCursor? = nil, saveCheckpoint: Bool = true
    ) throws -> Outcome {
        try connection.execute("BEGIN")
        do {
            if lock == .transaction {
                let locked = try connection.query(EventStoreSQL.tryLockProjectionForTransaction(projection.name))
                guard try locked.first?.decode(Bool.self, at: 0) == true else {
                    connection.rollbackQuietly()
                    return .busy
                }
            }
            let cursor: LogCursor
            if let from {
                cursor = from
            } else if let row = try connection.query(EventStoreSQL.checkpoint(projection.name)).first {
                cursor = try LogCursor(checkpointRow: row)
            } else {
                cursor = .start
            }
            let events = try connection.query(EventStoreSQL.readLog(after: cursor, limit: limit, filter: .all, gapSafe: gapSafe))
                .rows.map(RecordedEvent.init(row:))
            guard let last = events.last else {
                connection.rollbackQuietly()
                return .caughtUp
            }
            let handled = events.filter { projection.handles($0.type) && !parked.contains($0.position) }
            var statements: [PQQuery]
            do {
                statements = try projection.statements(forBatch: handled.map(\.envelope), tables: tables)
            } catch {
                connection.rollbackQuietly()
                return handled.count == 1 ? .eventFailed(handled[0], "\(error)") : .batchFailed("\(error)")
            }
            let producedCount = statements.count
            if saveCheckpoint {
                statements.append(EventStoreSQL.saveCheckpoint(projection.name, cursor: last.cursor, applied: events.count))
            }
            statements.append("COMMIT")
            do {
                _ = try connection.pipeline(statements)
            } catch {
                connection.rollbackQuietly()
                guard let index = error.index, index < producedCount, !error.error.isConnectionFailure else { throw error.error }
                return handled.count == 1
                    ? .eventFailed(handled[0], error.error.description) : .batchFailed(error.error.description)
            }
            return .applied(events.count, last: last.cursor)
        } catch {
            connection.rollbackQuietly()
            throw error
        }
    }
}
