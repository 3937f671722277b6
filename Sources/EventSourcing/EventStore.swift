/// The system of record: append-only streams and one global log.
///
/// Implementations decide concurrency in the store itself: an append succeeds only if the
/// stream is exactly at the expected version, so two writers (in one process or in two
/// instances) can never both extend the same version.
public protocol EventStore: Sendable {
    /// Appends events to one stream in one transaction.
    /// - Returns: the events as recorded, in stream order.
    /// - Throws: `EventStoreError.wrongExpectedVersion` when another writer got there first.
    func append(_ events: [NewEvent], to stream: StreamRef, expected: ExpectedVersion, metadata: EventMetadata) async throws
        -> [RecordedEvent]

    /// The events of one stream after `version` (0: from the start), in version order.
    func readStream(_ streamID: String, after version: Int64) async throws -> [RecordedEvent]

    /// Up to `limit` events of the whole log after `cursor` that match `filter`, in log order.
    /// Never returns an event while an earlier one may still commit.
    func readAll(after cursor: LogCursor, limit: Int, filter: LogFilter) async throws -> [RecordedEvent]
}

/// Narrows a read of the whole log.
public struct LogFilter: Hashable, Sendable {
    public var realm: String?
    public var streamID: String?
    public var types: Set<String>?

    public init(realm: String? = nil, streamID: String? = nil, types: Set<String>? = nil) {
        self.realm = realm
        self.streamID = streamID
        self.types = types
    }

    /// Everything.
    public static let all = LogFilter()

    /// Whether an event passes the filter.
    public func matches(_ envelope: EventEnvelope) -> Bool {
        if let realm, envelope.stream.realm != realm { return false }
        if let streamID, envelope.stream.id != streamID { return false }
        if let types, !types.contains(envelope.type) { return false }
        return true
    }
}

/// Failures every event store reports the same way.
public enum EventStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stream was not at the expected version (another writer appended first).
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: Int64)
    /// An inline projection failed; the append wrote nothing.
    case inlineProjectionFailed(projection: String, reason: String)
    /// An inline projection's unique index refused a value another append holds (a race two
    /// commands ran for one address, credential or host); the append wrote nothing. The
    /// projection's table home says which value it was.
    case uniqueValueTaken(projection: String, reason: String)
    /// An append with no events.
    case emptyAppend(stream: String)

    public var description: String {
        switch self {
        case .wrongExpectedVersion(let stream, let expected, let actual):
            return "stream \(stream) is at version \(actual), expected \(expected)"
        case .inlineProjectionFailed(let projection, let reason):
            return "inline projection \(projection) failed, nothing was written: \(reason)"
        case .uniqueValueTaken(let projection, let reason):
            return "inline projection \(projection) found the value taken, nothing was written: \(reason)"
        case .emptyAppend(let stream):
            return "an append to \(stream) needs at least one event"
        }
    }
}
