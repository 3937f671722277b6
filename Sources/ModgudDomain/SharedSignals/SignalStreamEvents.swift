import EventSourcing
import Foundation

/// ssf_stream.created: a receiver client created its stream (SSF 1.0 section 8.1.1.1).
public struct SignalStreamCreated: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.created"
    /// The transmitter-supplied `stream_id`.
    public var streamID: String
    public var clientID: String
    /// The issuer the receiver discovered us by: the `iss` of every SET on the stream.
    public var issuer: String
    public var configuration: SignalStreamConfiguration

    public init(streamID: String, clientID: String, issuer: String, configuration: SignalStreamConfiguration) {
        self.streamID = streamID
        self.clientID = clientID
        self.issuer = issuer
        self.configuration = configuration
    }
}

/// ssf_stream.configured: the whole receiver-supplied configuration after an update or a
/// replacement (sections 8.1.1.3 and 8.1.1.4).
public struct SignalStreamConfigured: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.configured"
    public var configuration: SignalStreamConfiguration

    public init(configuration: SignalStreamConfiguration) { self.configuration = configuration }
}

/// ssf_stream.status_changed (section 8.1.2.2). `by` is `receiver` or `operator`; a change
/// the receiver did not ask for is announced to it with a stream-updated SET.
public struct SignalStreamStatusChanged: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.status_changed"
    public var status: SignalStreamStatus
    public var reason: String?
    public var by: String

    public init(status: SignalStreamStatus, reason: String?, by: String) {
        self.status = status
        self.reason = reason
        self.by = by
    }
}

/// ssf_stream.subject_removed: no more SETs about this user on the stream (section 8.1.3.3).
public struct SignalStreamSubjectRemoved: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.subject_removed"
    public var userID: UUID

    public init(userID: UUID) { self.userID = userID }
}

/// ssf_stream.subject_added: a removed user is back on the stream (section 8.1.3.2; every
/// user is on a stream by default: `default_subjects` is `ALL`).
public struct SignalStreamSubjectAdded: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.subject_added"
    public var userID: UUID

    public init(userID: UUID) { self.userID = userID }
}

/// ssf_stream.verification_requested: the receiver asked for a verification SET (section 8.1.4).
public struct SignalStreamVerificationRequested: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.verification_requested"
    /// Echoed in the SET; the receiver's opaque value, at most 256 characters.
    public var state: String?
    public var requestedAt: Date

    public init(state: String?, requestedAt: Date) {
        self.state = state
        self.requestedAt = requestedAt
    }
}

/// ssf_stream.deleted: the stream and the SETs it held are gone (section 8.1.1.5).
public struct SignalStreamDeleted: DomainEvent, Equatable {
    public static let eventType = "ssf_stream.deleted"

    public init() {}
}

/// The events of a receiver's stream.
public enum SignalStreamEvent: AggregateEvent, Equatable {
    case created(SignalStreamCreated)
    case configured(SignalStreamConfigured)
    case statusChanged(SignalStreamStatusChanged)
    case subjectRemoved(SignalStreamSubjectRemoved)
    case subjectAdded(SignalStreamSubjectAdded)
    case verificationRequested(SignalStreamVerificationRequested)
    case deleted(SignalStreamDeleted)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .created(let event): return try NewEvent(event)
        case .configured(let event): return try NewEvent(event)
        case .statusChanged(let event): return try NewEvent(event)
        case .subjectRemoved(let event): return try NewEvent(event)
        case .subjectAdded(let event): return try NewEvent(event)
        case .verificationRequested(let event): return try NewEvent(event)
        case .deleted(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as SignalStreamCreated: self = .created(event)
        case let event as SignalStreamConfigured: self = .configured(event)
        case let event as SignalStreamStatusChanged: self = .statusChanged(event)
        case let event as SignalStreamSubjectRemoved: self = .subjectRemoved(event)
        case let event as SignalStreamSubjectAdded: self = .subjectAdded(event)
        case let event as SignalStreamVerificationRequested: self = .verificationRequested(event)
        case let event as SignalStreamDeleted: self = .deleted(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "ssf-stream")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(SignalStreamCreated.self)
        registry.register(SignalStreamConfigured.self)
        registry.register(SignalStreamStatusChanged.self)
        registry.register(SignalStreamSubjectRemoved.self)
        registry.register(SignalStreamSubjectAdded.self)
        registry.register(SignalStreamVerificationRequested.self)
        registry.register(SignalStreamDeleted.self)
    }
}
