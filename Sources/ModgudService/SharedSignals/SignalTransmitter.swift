import EventSourcing
import EventStorePostgres
import Foundation
import Logging
import Metrics
import ModgudDomain
import PQ

/// Turns the log into SETs waiting per stream (issue 30): a log follower with the projection
/// daemon's shape. Each batch is one transaction that takes the transmitter's advisory lock
/// (another instance holding it means "busy"), reads the next SET-worthy events gap-safely
/// after its cursor, applies stream events to `ssf_streams`, fans every other fact out into
/// `ssf_outbox`, moves the cursor and commits, with a NOTIFY for the deliverers. So each event
/// is enqueued once per stream, in log order, however many instances run and whenever one is
/// killed: a batch that did not commit is read again.
public actor SignalTransmitter: ProjectionWorker {
    /// The name the runner knows it by (and its cursor's row in `checkpoints`).
    public static let name = SignalTables.cursorName

    private let pool: PQPool
    private let batchSize: Int
    private let listener: NotificationListener
    private let enqueued: @Sendable () -> Void
    /// How long the transmitter lets events gather after a wake-up before it reads them: under
    /// load, one batch per gather rather than one per commit. It bounds the latency it adds.
    private let gather: Duration
    /// No receiver has a stream (as of the last batch): nobody waits for a SET, so the
    /// transmitter gathers a whole second and costs a busy server nothing it can measure.
    private var idle = false
    private let logger = Logger(label: "modgud.ssf")

    /// - Parameter enqueued: told after a batch that enqueued SETs committed (this instance's
    ///   deliverers look at once; the others hear the NOTIFY).
    public init(pool: PQPool, batchSize: Int = 500, gather: Duration = .milliseconds(50), enqueued: @escaping @Sendable () -> Void = {}) {
        self.pool = pool
        self.gather = gather
        self.batchSize = max(1, batchSize)
        self.listener = NotificationListener(configuration: pool.configuration, channel: EventStoreSQL.channel)
        self.enqueued = enqueued
    }

    public func waitForEvents(timeout: Duration) async throws {
        await listener.wait(timeout: timeout)
        let pause = idle ? max(gather, .seconds(1)) : gather
        if pause > .zero { try await Task.sleep(for: pause) }
    }

    public func shutdown() async {
        await listener.close()
    }

    public func step(_ name: String) async throws -> ProjectionStep {
        let limit = batchSize
        let logger = self.logger
        let outcome = try await pool.transaction { connection in
            try Self.transmitBatch(on: connection, limit: limit, logger: logger)
        }
        guard let (applied, sets, streams) = outcome else { return .busy }
        idle = !streams
        if sets > 0 {
            Counter(label: "modgud_ssf_sets_enqueued_total").increment(by: sets)
            enqueued()
        }
        return applied == 0 ? .caughtUp : .applied(applied)
    }

    /// Runs until cancelled (the lifecycle service), backing off while the database is away.
    public nonisolated func run(pollInterval: Duration = .seconds(1), onOutage: @escaping @Sendable (any Error, Duration) -> Void = { _, _ in })
        async
    {
        await ProjectionRunner(worker: self, projections: [Self.name], pollInterval: pollInterval).run(onError: onOutage)
        await shutdown()
    }

    /// One batch: nil when another instance holds the lock; else the events applied, the SETs
    /// enqueued, and whether any stream exists after it.
    static func transmitBatch(on connection: isolated PQConnection, limit: Int, logger: Logger) throws -> (Int, Int, Bool)? {
        guard try connection.query(EventStoreSQL.tryLockProjectionForTransaction(name)).first?.decode(Bool.self, at: 0) == true else { return nil }
        let cursor = try connection.query(EventStoreSQL.checkpoint(name)).first.map(LogCursor.init(checkpointRow:)) ?? .start
        let batch = try EventLogReads.admitted(after: cursor, types: SignalCatalog.eventTypes, limit: limit, on: connection)
        var next = cursor
        var applied = 0
        var sets = 0
        for event in batch.events {
            do {
                for statement in try statements(for: event) { sets += try connection.query(statement).affectedRows }
            } catch let error as PQError {
                throw error
            } catch {
                // An event this build cannot read must not stop every stream: it is skipped, loudly.
                Counter(label: "modgud_ssf_events_skipped_total").increment()
                logger.error("shared signals: event skipped", metadata: ["position": "\(event.position)", "error": "\(error)"])
            }
            next = event.cursor
            applied += 1
        }
        // Everything up to the horizon that was not picked is of no use here, unless the
        // batch was full (then the rest comes next batch).
        if applied < limit, let horizon = batch.horizon, horizon > next { next = horizon }
        let streams = try connection.query(SignalStreamsTable.anyStream).first?.decode(Bool.self, at: 0) ?? false
        guard next != cursor else { return (0, 0, streams) }
        _ = try connection.query(EventStoreSQL.saveCheckpoint(name, cursor: next, applied: applied))
        if sets > 0 { _ = try connection.query(SignalTables.notify) }
        return (applied, sets, streams)
    }

    /// What one event does to the transmitter's tables.
    static func statements(for event: RecordedEvent) throws -> [PQQuery] {
        let realm = event.envelope.stream.realm
        guard event.envelope.stream.type == SignalStream.streamType else {
            guard let fact = try SignalCatalog.fact(for: event.envelope) else { return [] }
            return [try SignalOutboxTable.fanOut(fact, realm: realm, position: event.position, at: event.recordedAt)]
        }
        let clientID = StreamNames.clientID(of: event.envelope.stream)
        switch try SignalStreamEvent(decoding: event.envelope, registry: ModgudEvents.registry) {
        case .created(let created): return [SignalStreamsTable.create(realm: realm, created: created)]
        case .configured(let configured): return [SignalStreamsTable.configure(realm: realm, clientID: clientID, configured.configuration)]
        case .statusChanged(let changed):
            var statements = SignalStreamsTable.setStatus(realm: realm, clientID: clientID, changed.status)
            if changed.by == SignalStream.operatorActor {
                statements.append(
                    try SignalOutboxTable.streamUpdated(
                        realm: realm, clientID: clientID, status: changed.status, reason: changed.reason, position: event.position, at: event.recordedAt))
            }
            return statements
        case .subjectRemoved(let removed): return [SignalStreamsTable.removeSubject(realm: realm, clientID: clientID, userID: removed.userID)]
        case .subjectAdded(let added): return [SignalStreamsTable.addSubject(realm: realm, clientID: clientID, userID: added.userID)]
        case .verificationRequested(let requested):
            return [try SignalOutboxTable.verification(realm: realm, clientID: clientID, state: requested.state, position: event.position, at: event.recordedAt)]
        case .deleted: return SignalStreamsTable.delete(realm: realm, clientID: clientID)
        }
    }
}
