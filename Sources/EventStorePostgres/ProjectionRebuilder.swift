import EventSourcing
import PQ

/// Rebuilds a projection from the whole log into fresh tables and swaps them in at the end.
///
/// Steps: take the projection's session-scoped advisory lock (refused if a daemon is in a
/// batch or another rebuild runs; daemons skip the projection while it is held); create
/// `table__rebuild` copies (`LIKE … INCLUDING ALL`; an insert-only table's copy without its
/// indexes, built once after the fold by `RebuildIndexes`); apply the log gap-safely in
/// batches; then, in one transaction, catch up to the end and swap the tables. For an inline
/// projection the final catch-up holds `LOCK events IN EXCLUSIVE MODE` so that no append
/// can commit between the last event read and the swap (appends wait, briefly, and then
/// write into the new tables). For an asynchronous projection the checkpoint moves to the
/// rebuild's last event in the same transaction, and the daemon carries on from there.
/// Events parked for the projection stay skipped, so a rebuild reproduces exactly what
/// continuous operation produced.
public struct ProjectionRebuilder: Sendable {
    /// Progress of a running rebuild.
    public struct Progress: Sendable {
        public var applied: Int
        public var total: Int
    }

    /// What a finished rebuild did.
    public struct Report: Sendable {
        public var events: Int
        public var seconds: Double
    }

    let pool: PQPool
    public let batchSize: Int

    public init(pool: PQPool, batchSize: Int = 2000) {
        self.pool = pool
        self.batchSize = batchSize
    }

    /// Rebuilds `projection`.
    /// - Throws: `ProjectionRebuildError.busy` when a daemon or another rebuild holds it.
    public func rebuild(_ projection: any SQLProjection, progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws
        -> Report
    {
        let batchSize = self.batchSize
        let clock = ContinuousClock()
        let started = clock.now
        let events = try await pool.withConnection { connection in
            try await connection.run { connection in
                try Self.rebuild(projection, on: connection, batchSize: batchSize, progress: progress)
            }
        }
        let elapsed = clock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Report(events: events, seconds: seconds)
    }

    private static func rebuild(
        _ projection: any SQLProjection, on connection: isolated PQConnection, batchSize: Int,
        progress: (Progress) -> Void
    ) throws -> Int {
        let name = projection.name
        guard try connection.query(EventStoreSQL.tryLockProjectionForSession(name)).first?.decode(Bool.self, at: 0) == true else {
            throw ProjectionRebuildError.busy(projection: name)
        }
        defer { _ = try? connection.query(EventStoreSQL.unlockProjectionForSession(name)) }

        let fresh = ProjectionTables.rebuild(projection)
        let live = ProjectionTables.live(projection)
        for table in projection.tables {
            let indexes = projection.insertOnlyTables.contains(table) ? " EXCLUDING INDEXES" : ""
            try connection.query("DROP TABLE IF EXISTS \(unescaped: fresh(table))")
            try connection.query("CREATE TABLE \(unescaped: fresh(table)) (LIKE \(unescaped: live(table)) INCLUDING ALL\(unescaped: indexes))")
        }
        let parked = Set(
            try connection.query(EventStoreSQL.parkedPositions(name)).rows.map { try $0.decode(Int64.self, at: 0) })
        let total = try connection.query(EventStoreSQL.countEvents(types: projection.eventTypes)).first?.decode(Int.self, at: 0) ?? 0
        var run = Run(cursor: .start, applied: 0)
        try applyLog(projection, on: connection, into: fresh, skipping: parked, batchSize: batchSize, run: &run) { applied in
            progress(Progress(applied: applied, total: max(total, applied)))
        }
        try buildDeferredIndexes(projection, on: connection, from: live, to: fresh)
        try swap(projection, on: connection, from: fresh, skipping: parked, batchSize: batchSize, run: &run)
        progress(Progress(applied: run.applied, total: max(total, run.applied)))
        return run.applied
    }

    /// Where a rebuild stands in the log.
    private struct Run {
        var cursor: LogCursor
        var applied: Int
    }

    /// Applies the log, batch by batch (gap-safe), into the fresh tables.
    private static func applyLog(
        _ projection: any SQLProjection, on connection: isolated PQConnection, into fresh: ProjectionTables, skipping parked: Set<Int64>,
        batchSize: Int, run: inout Run, progress: (Int) -> Void
    ) throws {
        while true {
            let outcome = try BatchApplier.applyNextBatch(
                projection, on: connection, tables: fresh, skipping: parked, limit: batchSize, lock: .heldBySession,
                gapSafe: true, from: run.cursor, saveCheckpoint: false)
            guard case .applied(let count, let last) = outcome else {
                if case .eventFailed(let event, let reason) = outcome {
                    throw ProjectionRebuildError.eventFailed(projection: projection.name, position: event.position, reason: reason)
                }
                if case .batchFailed(let reason) = outcome {
                    throw ProjectionRebuildError.eventFailed(projection: projection.name, position: -1, reason: reason)
                }
                return
            }
            run.applied += count
            run.cursor = last
            progress(run.applied)
        }
    }

    /// Indexes the insert-only copies after the fold, before the swap's lock is taken.
    private static func buildDeferredIndexes(
        _ projection: any SQLProjection, on connection: isolated PQConnection, from live: ProjectionTables, to fresh: ProjectionTables
    ) throws {
        for table in projection.tables where projection.insertOnlyTables.contains(table) {
            do {
                try RebuildIndexes.copy(from: live(table), to: fresh(table), on: connection)
            } catch {
                throw ProjectionRebuildError.eventFailed(
                    projection: projection.name, position: -1, reason: "indexing the rebuilt \(table): \(error)")
            }
        }
    }

    /// The swap: catch up to the very end and replace the tables in one transaction (an inline
    /// projection holds appends off meanwhile, so nothing commits between the catch-up and the swap).
    private static func swap(
        _ projection: any SQLProjection, on connection: isolated PQConnection, from fresh: ProjectionTables, skipping parked: Set<Int64>,
        batchSize: Int, run: inout Run
    ) throws {
        let live = ProjectionTables.live(projection)
        try connection.execute("BEGIN")
        do {
            let inline = projection.mode == .inline
            if inline {
                try connection.execute("LOCK TABLE events IN EXCLUSIVE MODE")
            }
            while true {
                let read = try BatchApplier.Read.next(for: projection, after: run.cursor, limit: batchSize, gapSafe: !inline, on: connection)
                guard let last = read.next else { break }
                let events = read.events
                let handled = events.filter { projection.handles($0.type) && !parked.contains($0.position) }
                let statements = try projection.statements(forBatch: handled.map(\.envelope), tables: fresh)
                do {
                    _ = try connection.pipeline(statements)
                } catch {
                    throw ProjectionRebuildError.eventFailed(projection: projection.name, position: -1, reason: error.description)
                }
                run.applied += events.count
                run.cursor = last
            }
            for table in projection.tables {
                try connection.query("DROP TABLE \(unescaped: live(table))")
                try connection.query("ALTER TABLE \(unescaped: fresh(table)) RENAME TO \(unescaped: live(table))")
            }
            if !inline {
                try connection.query(EventStoreSQL.replaceCheckpoint(projection.name, cursor: run.cursor, applied: run.applied))
            }
            try connection.execute("COMMIT")
        } catch {
            connection.rollbackQuietly()
            throw error
        }
    }
}

/// Why a rebuild did not happen.
public enum ProjectionRebuildError: Error, Equatable, CustomStringConvertible {
    /// A daemon is applying a batch or another rebuild runs; try again.
    case busy(projection: String)
    /// An event that continuous operation applied fails now.
    case eventFailed(projection: String, position: Int64, reason: String)
    /// No projection of that name is registered.
    case unknown(projection: String)

    public var description: String {
        switch self {
        case .busy(let projection):
            return "projection \(projection) is held by a running daemon batch or another rebuild; try again"
        case .eventFailed(let projection, let position, let reason):
            return "projection \(projection) failed at position \(position): \(reason)"
        case .unknown(let projection):
            return "no projection named \(projection)"
        }
    }
}
