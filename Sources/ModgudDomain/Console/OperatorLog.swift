import EventSourcing
import Foundation

/// What an operator did in the console that is not a change of an aggregate of its own
/// (issue 31): a projection rebuilt, dead letters retried. One stream per operator, so every
/// console action is an event with the operator as actor, in the operator's history.
public enum OperatorLog: Aggregate {
    public static let streamType = "operator-log"

    public struct State: Sendable, Equatable {
        public var actions = 0
    }

    public enum Command: Sendable {
        /// `action`: a name like `projection.rebuild`; `target`: what it acted on.
        case record(action: String, target: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [OperatorLogEvent] {
        switch command {
        case .record(let action, let target):
            guard (1...64).contains(action.utf8.count), action.utf8.allSatisfy({ (0x61...0x7a).contains($0) || $0 == 0x2e || $0 == 0x2d }),
                target.utf8.count <= 200, !target.contains("\u{0}")
            else { throw DomainError("OperatorLog.Invalid", "An action is a-z, . and -; a target at most 200 bytes.") }
            return [.recorded(OperatorActionRecorded(action: action, target: target))]
        }
    }

    public static func evolve(_ state: State, _ event: OperatorLogEvent) -> State {
        var next = state
        next.actions += 1
        return next
    }
}

/// operator.action_recorded
public struct OperatorActionRecorded: DomainEvent, Equatable {
    public static let eventType = "operator.action_recorded"
    public var action: String
    public var target: String

    public init(action: String, target: String) {
        self.action = action
        self.target = target
    }
}

/// The events of an operator's log.
public enum OperatorLogEvent: AggregateEvent, Equatable {
    case recorded(OperatorActionRecorded)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .recorded(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as OperatorActionRecorded: self = .recorded(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "operator-log")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(OperatorActionRecorded.self)
    }
}
