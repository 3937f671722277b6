/// An event type of the domain: a named, versioned, self-contained fact.
///
/// The name is stable forever (`user.registered`); a change of shape bumps `revision` and
/// registers an upcaster for the old one. Payloads never hold secrets (docs/architecture.md, "Event sourcing").
public protocol DomainEvent: Codable, Sendable {
    /// The stable name stored with the event.
    static var eventType: String { get }
    /// The payload's schema revision (1 for the first).
    static var revision: Int { get }
}

extension DomainEvent {
    public static var revision: Int { 1 }
}

/// An event ready to append: its name, revision and JSON payload.
public struct NewEvent: Hashable, Sendable {
    public var type: String
    public var revision: Int
    /// The payload as UTF-8 JSON.
    public var payload: [UInt8]

    public init(type: String, revision: Int = 1, payload: [UInt8]) {
        self.type = type
        self.revision = revision
        self.payload = payload
    }

    /// Encodes a domain event (keys sorted, so equal events encode to equal bytes).
    public init<E: DomainEvent>(_ event: E) throws {
        self.init(type: E.eventType, revision: E.revision, payload: try EventJSON.encode(event))
    }
}

/// An event as the appender knows it: everything except where it landed in the global log.
///
/// Inline projections see this form: they run inside the append transaction, before the
/// database has handed out a log position.
public struct EventEnvelope: Hashable, Sendable {
    public var stream: StreamRef
    /// Version of the stream after this event (1 for the first event of a stream).
    public var streamVersion: Int64
    public var type: String
    public var revision: Int
    /// The payload as UTF-8 JSON.
    public var payload: [UInt8]
    public var metadata: EventMetadata

    public init(stream: StreamRef, streamVersion: Int64, type: String, revision: Int, payload: [UInt8], metadata: EventMetadata) {
        self.stream = stream
        self.streamVersion = streamVersion
        self.type = type
        self.revision = revision
        self.payload = payload
        self.metadata = metadata
    }

    /// Decodes the payload as `E` (no registry lookup; the caller knows the type).
    public func decode<E: DomainEvent>(_ type: E.Type) throws -> E {
        try EventJSON.decode(type, from: payload)
    }
}
