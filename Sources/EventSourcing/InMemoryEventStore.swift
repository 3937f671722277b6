#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An event store in memory, for unit tests of the logic above the store.
///
/// Not a substitute for the PostgreSQL store in integration tests: it has no gaps to
/// guard against (appends are serialized by the actor) and no durability.
public actor InMemoryEventStore: EventStore {
    private var log: [RecordedEvent] = []
    private var versions: [String: Int64] = [:]
    private var nextTransaction: UInt64 = 1
    private let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    public func append(_ events: [NewEvent], to stream: StreamRef, expected: ExpectedVersion, metadata: EventMetadata) throws
        -> [RecordedEvent]
    {
        guard !events.isEmpty else { throw EventStoreError.emptyAppend(stream: stream.id) }
        let current = versions[stream.id] ?? 0
        guard current == expected.value else {
            throw EventStoreError.wrongExpectedVersion(stream: stream.id, expected: expected, actual: current)
        }
        let transaction = nextTransaction
        nextTransaction += 1
        let recordedAt = now()
        var recorded: [RecordedEvent] = []
        for (offset, event) in events.enumerated() {
            let envelope = EventEnvelope(
                stream: stream, streamVersion: current + Int64(offset) + 1, type: event.type,
                revision: event.revision, payload: event.payload, metadata: metadata)
            recorded.append(
                RecordedEvent(envelope: envelope, position: Int64(log.count + offset + 1), transactionID: transaction, recordedAt: recordedAt))
        }
        log.append(contentsOf: recorded)
        versions[stream.id] = current + Int64(events.count)
        return recorded
    }

    public func readStream(_ streamID: String, after version: Int64) -> [RecordedEvent] {
        log.filter { $0.stream.id == streamID && $0.streamVersion > version }
    }

    public func readAll(after cursor: LogCursor, limit: Int, filter: LogFilter) -> [RecordedEvent] {
        Array(log.lazy.filter { $0.cursor > cursor && filter.matches($0.envelope) }.prefix(limit))
    }
}
