import EventSourcing
import Metrics
import PQ

/// The event store on PostgreSQL (docs/architecture.md, "The gap problem").
///
/// An append is one pipelined round trip in one implicit transaction: the guarded stream
/// update and event insert (one statement), every inline projection's statements and the
/// caller's extra statements (an outbox row, say). If any of them fails, nothing is
/// written. Concurrent appends share that transaction (`AppendBatcher`: group commit), each
/// with its own outcome. After the commit a NOTIFY wakes projection daemons (see `AppendNotifier`).
public final class PostgresEventStore: EventStore {
    /// Whether the store sends the NOTIFY that wakes projection daemons.
    public enum NotifyMode: Sendable {
        /// After each append commits, coalesced to one in flight per instance.
        case afterCommit
        /// Never: daemons rely on polling alone.
        case off
    }

    let pool: PQPool
    public let inlineProjections: [any SQLProjection]
    public let notifyMode: NotifyMode
    /// Rewrites metadata before it is stored (the product seals the client IP, which then
    /// expires with its day key: docs/operations/retention.md, "Client IPs").
    public let metadataSealer: (@Sendable (EventMetadata) async throws -> EventMetadata)?
    let notifier: AppendNotifier
    /// Group commit (issue 27), or nil when every append commits alone.
    let batcher: AppendBatcher?
    /// `modgud_event_append_seconds`: one append's round trip, inline projections included.
    private let appendTimer = Timer(label: "modgud_event_append_seconds")

    /// - Parameters:
    ///   - pool: where to run.
    ///   - inlineProjections: projections updated in every append's transaction.
    ///   - groupCommit: how concurrent appends share commits (`AppendBatcher`); nil commits each alone.
    public init(
        pool: PQPool, inlineProjections: [any SQLProjection] = [], notifyMode: NotifyMode = .afterCommit,
        metadataSealer: (@Sendable (EventMetadata) async throws -> EventMetadata)? = nil,
        groupCommit: AppendBatcher.Options? = AppendBatcher.Options()
    ) {
        precondition(inlineProjections.allSatisfy { $0.mode == .inline }, "only inline projections run in the append")
        self.metadataSealer = metadataSealer
        self.pool = pool
        self.inlineProjections = inlineProjections
        self.notifyMode = notifyMode
        self.notifier = AppendNotifier(pool: pool)
        self.batcher = groupCommit.map { AppendBatcher(pool: pool, options: $0) }
    }

    public func append(_ events: [NewEvent], to stream: StreamRef, expected: ExpectedVersion, metadata: EventMetadata) async throws
        -> [RecordedEvent]
    {
        try await append(events, to: stream, expected: expected, metadata: metadata, alsoExecuting: [])
    }

    /// Appends events and runs `extra` statements in the same transaction.
    /// - Throws: `EventStoreError.wrongExpectedVersion` on a concurrency conflict,
    ///   `EventStoreError.inlineProjectionFailed` when a projection's statement failed
    ///   (nothing is written in either case), `PQError` for anything else.
    public func append(
        _ events: [NewEvent], to stream: StreamRef, expected: ExpectedVersion, metadata: EventMetadata, alsoExecuting extra: [PQQuery]
    ) async throws -> [RecordedEvent] {
        try await append([StreamWrite(stream: stream, expected: expected, events: events)], metadata: metadata, alsoExecuting: extra)[0]
    }

    /// Appends to several streams in one transaction: every stream's version guard holds, or
    /// nothing is written (a redeemed registration code and the user it creates, say).
    /// - Returns: the recorded events of each write, in the order of `writes`.
    /// - Throws: as the single-stream append; a conflict names the stream that lost.
    public func append(_ writes: [StreamWrite], metadata: EventMetadata, alsoExecuting extra: [PQQuery] = []) async throws
        -> [[RecordedEvent]]
    {
        guard !writes.isEmpty else { throw EventStoreError.emptyAppend(stream: "") }
        let metadata = try await metadataSealer?(metadata) ?? metadata
        for write in writes where write.events.isEmpty { throw EventStoreError.emptyAppend(stream: write.stream.id) }
        let envelopes = writes.map { write in
            write.events.enumerated().map { offset, event in
                EventEnvelope(
                    stream: write.stream, streamVersion: write.expected.value + Int64(offset) + 1, type: event.type,
                    revision: event.revision, payload: event.payload, metadata: metadata)
            }
        }
        var statements: [PQQuery] = writes.map { write in
            EventStoreSQL.append(
                stream: write.stream, expected: write.expected, types: write.events.map(\.type),
                revisions: write.events.map { Int32($0.revision) }, payloads: write.events.map { PQJSON(bytes: $0.payload) },
                metadata: metadata.json)
        }
        // Which projection produced each statement, to name it when one fails.
        var owners: [String?] = Array(repeating: nil, count: writes.count)
        let allEnvelopes = envelopes.flatMap { $0 }
        for projection in inlineProjections {
            let handled = allEnvelopes.filter { projection.handles($0.type) }
            guard !handled.isEmpty else { continue }
            let produced = try projection.statements(forBatch: handled, tables: .live(projection))
            statements.append(contentsOf: produced)
            owners.append(contentsOf: repeatElement(Optional(projection.name), count: produced.count))
        }
        statements.append(contentsOf: extra)

        let finalStatements = statements
        let results: [PQResult]
        let started = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - started
            appendTimer.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        }
        do {
            if let batcher {
                results = try await batcher.commit(finalStatements, sortKey: writes[0].stream.id)
            } else {
                results = try await pool.withConnection { connection in
                    try await connection.pipelineInPlace(finalStatements)
                }
            }
        } catch let failure as PQPipelineError {
            throw await translate(failure, writes: writes, owners: owners)
        }
        if notifyMode == .afterCommit { notifier.poke() }
        return try writes.indices.map { index in
            try results[index].rows.enumerated().map { offset, row in
                RecordedEvent(
                    envelope: envelopes[index][offset],
                    position: try row.decode(Int64.self, at: 0),
                    transactionID: try row.decode(PQTransactionID.self, at: 1).rawValue,
                    recordedAt: try row.decode(at: 3))
            }
        }
    }

    private func translate(_ failure: PQPipelineError, writes: [StreamWrite], owners: [String?]) async -> any Error {
        let error = failure.error
        // A lost connection is the database's state, not a projection's fault.
        if error.meansDatabaseUnavailable { return error }
        if let index = failure.index, index < writes.count, error.constraint == EventStoreSQL.conflictConstraint {
            // Only the conflict path pays for reading the version it lost to.
            let write = writes[index]
            let actual = (try? await version(of: write.stream.id)) ?? -1
            return EventStoreError.wrongExpectedVersion(stream: write.stream.id, expected: write.expected, actual: actual)
        }
        if let index = failure.index, index >= writes.count, index < owners.count, let projection = owners[index] {
            // SQLSTATE 23505, unique_violation: a race for a unique value, not a fault.
            if error.sqlState == "23505" { return EventStoreError.uniqueValueTaken(projection: projection, reason: error.description) }
            return EventStoreError.inlineProjectionFailed(projection: projection, reason: error.description)
        }
        return error
    }

    public func readStream(_ streamID: String, after version: Int64) async throws -> [RecordedEvent] {
        let result = try await pool.query(EventStoreSQL.readStream(streamID, after: version))
        return try result.rows.map(RecordedEvent.init(row:))
    }

    /// Reads a stream's events after `version` in one pipeline with the caller's `queries`
    /// (one round trip, one implicit transaction): the read goes in at `index`. Returns the
    /// events and every statement's result, the read's included, in order.
    public func readStream(_ streamID: String, after version: Int64, pipelinedWith queries: [PQQuery], at index: Int) async throws
        -> (events: [RecordedEvent], results: [PQResult])
    {
        var all = queries
        all.insert(EventStoreSQL.readStream(streamID, after: version), at: index)
        let results = try await pool.pipeline(all)
        return (try results[index].rows.map(RecordedEvent.init(row:)), results)
    }

    public func readAll(after cursor: LogCursor, limit: Int, filter: LogFilter) async throws -> [RecordedEvent] {
        let result = try await pool.query(EventStoreSQL.readLog(after: cursor, limit: limit, filter: filter))
        return try result.rows.map(RecordedEvent.init(row:))
    }

    /// The current version of a stream (0 when it does not exist).
    public func version(of streamID: String) async throws -> Int64 {
        let result = try await pool.query("SELECT version FROM streams WHERE id = \(streamID)")
        return try result.first?.decode(Int64.self, at: 0) ?? 0
    }
}

/// Events for one stream, expected at one version: a part of a multi-stream append.
public struct StreamWrite: Sendable {
    public var stream: StreamRef
    public var expected: ExpectedVersion
    public var events: [NewEvent]

    public init(stream: StreamRef, expected: ExpectedVersion, events: [NewEvent]) {
        self.stream = stream
        self.expected = expected
        self.events = events
    }
}

extension PostgresEventStore {
    /// Returns once the wake-up NOTIFY of every append so far has been sent (tests that count
    /// round trips wait for it instead of sleeping).
    public func notificationsSent() async {
        await notifier.idle()
    }
}
