import EventSourcing
import PQ

/// Applies one batch of the log to a projection's tables, on one connection.
///
/// A projection that names its event types reads only those (issue 70): the database filters
/// the log, and the batch's cursor moves past everything else up to the horizon read under the
/// same snapshot (`EventLogReads.admitted`). Before, every batch read and decoded every event
/// and dropped the ones the projection has no use for, so a rebuild of a projection with a
/// few event types cost as much as reading the whole log through Swift.
enum BatchApplier {
    enum Lock {
        /// Take the transaction-scoped advisory lock; report busy if another holds it.
        case transaction
        /// The caller already holds the session-scoped lock (a rebuild).
        case heldBySession
    }

    enum Outcome: Sendable {
        /// `count` events of the projection's types were applied (0 when only the cursor moved
        /// past events of other types), and the cursor is now `last`.
        case applied(Int, last: LogCursor)
        case caughtUp
        case busy
        /// One event's statements failed (or could not be produced).
        case eventFailed(RecordedEvent, String)
        /// The statements of a batch of several events failed: which event is at fault is unknown.
        case batchFailed(String)
    }

    /// The next events a projection handles, and where its cursor moves once they are applied.
    struct Read {
        var events: [RecordedEvent]
        /// Nil: nothing was read and the cursor stays.
        var next: LogCursor?

        /// Reads after `cursor`: the projection's types only when it names them, with the
        /// horizon when the read is gap-safe; every event otherwise.
        static func next(
            for projection: any SQLProjection, after cursor: LogCursor, limit: Int, gapSafe: Bool, on connection: isolated PQConnection
        ) throws -> Read {
            guard let types = projection.eventTypes, gapSafe else {
                let filter = LogFilter(types: projection.eventTypes)
                let events = try connection.query(EventStoreSQL.readLog(after: cursor, limit: limit, filter: filter, gapSafe: gapSafe))
                    .rows.map(RecordedEvent.init(row:))
                return Read(events: events, next: events.last?.cursor)
            }
            let batch = try EventLogReads.admitted(after: cursor, types: types.sorted(), limit: limit, on: connection)
            // A full batch may be followed by more of its types: stop at its last event. A short
            // one holds every admitted event of those types, so the cursor may pass the rest.
            var next = batch.events.last?.cursor
            if batch.events.count < limit, let horizon = batch.horizon, horizon > (next ?? cursor) {
                next = horizon
            }
            return Read(events: batch.events, next: next)
        }
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
            let read = try Read.next(for: projection, after: cursor, limit: limit, gapSafe: gapSafe, on: connection)
            guard let last = read.next else {
                connection.rollbackQuietly()
                return .caughtUp
            }
            let handled = read.events.filter { projection.handles($0.type) && !parked.contains($0.position) }
            return try apply(
                handled, of: projection, on: connection, tables: tables, advancingTo: last, count: read.events.count,
                saveCheckpoint: saveCheckpoint)
        } catch {
            connection.rollbackQuietly()
            throw error
        }
    }

    /// Applies the events' statements, moves the checkpoint when asked, and commits.
    private static func apply(
        _ handled: [RecordedEvent], of projection: any SQLProjection, on connection: isolated PQConnection, tables: ProjectionTables,
        advancingTo last: LogCursor, count: Int, saveCheckpoint: Bool
    ) throws -> Outcome {
        var statements: [PQQuery]
        do {
            statements = try projection.statements(forBatch: handled.map(\.envelope), tables: tables)
        } catch {
            connection.rollbackQuietly()
            return handled.count == 1 ? .eventFailed(handled[0], "\(error)") : .batchFailed("\(error)")
        }
        let producedCount = statements.count
        if saveCheckpoint {
            statements.append(EventStoreSQL.saveCheckpoint(projection.name, cursor: last, applied: count))
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
        return .applied(count, last: last)
    }
}
