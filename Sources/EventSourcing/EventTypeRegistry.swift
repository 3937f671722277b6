/// Maps stored event names and revisions to Swift types. Built once at start-up.
///
/// Decoding goes only through registered entries: an event whose (name, revision) was not
/// registered fails loudly with an error naming it, instead of being silently dropped.
public struct EventTypeRegistry: Sendable {
    /// Decodes one payload into a domain event.
    public typealias Decoder = @Sendable ([UInt8]) throws -> any DomainEvent

    private struct Key: Hashable {
        var type: String
        var revision: Int
    }

    private var decoders: [Key: Decoder] = [:]

    public init() {}

    /// Registers the current revision of an event type.
    public mutating func register<E: DomainEvent>(_ type: E.Type) {
        decoders[Key(type: E.eventType, revision: E.revision)] = { bytes in try EventJSON.decode(E.self, from: bytes) }
    }

    /// Registers an upcaster: how to read an older revision of `name` as a current event.
    public mutating func register<Old: Decodable & Sendable>(
        _ name: String, revision: Int, as old: Old.Type, upcast: @escaping @Sendable (Old) -> any DomainEvent
    ) {
        decoders[Key(type: name, revision: revision)] = { bytes in upcast(try EventJSON.decode(Old.self, from: bytes)) }
    }

    /// Whether `name` at `revision` can be decoded.
    public func contains(_ name: String, revision: Int) -> Bool {
        decoders[Key(type: name, revision: revision)] != nil
    }

    /// Every registered (name, revision), sorted, for diagnostics.
    public var registeredTypes: [(name: String, revision: Int)] {
        decoders.keys.map { ($0.type, $0.revision) }.sorted { ($0.name, $0.revision) < ($1.name, $1.revision) }
    }

    /// Decodes an envelope's payload.
    /// - Throws: `EventDecodingError.unknownType` when the type was never registered,
    ///   `.malformedPayload` when the JSON does not fit the registered type.
    public func decode(_ envelope: EventEnvelope) throws(EventDecodingError) -> any DomainEvent {
        guard let decoder = decoders[Key(type: envelope.type, revision: envelope.revision)] else {
            throw .unknownType(name: envelope.type, revision: envelope.revision)
        }
        do {
            return try decoder(envelope.payload)
        } catch {
            throw .malformedPayload(name: envelope.type, revision: envelope.revision, reason: "\(error)")
        }
    }

    /// Decodes a recorded event's payload.
    public func decode(_ event: RecordedEvent) throws(EventDecodingError) -> any DomainEvent {
        try decode(event.envelope)
    }
}

/// Why an event could not be decoded.
public enum EventDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownType(name: String, revision: Int)
    case malformedPayload(name: String, revision: Int, reason: String)

    public var description: String {
        switch self {
        case .unknownType(let name, let revision):
            return "event type '\(name)' revision \(revision) is not registered"
        case .malformedPayload(let name, let revision, let reason):
            return "event '\(name)' revision \(revision) has a malformed payload: \(reason)"
        }
    }
}
