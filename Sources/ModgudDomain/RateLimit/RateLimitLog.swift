import EventSourcing
import Foundation

/// The log's record of rate limits that refused a request (issue 43: "rate-limited attempts"
/// are sign-in failures an operator triages). One stream per bucket and UTC day. A bucket's
/// first refusal is recorded, then none for `tripInterval` (`rate_limits.tripped_at`), so a
/// flood against one bucket writes one event every five minutes, not one per request. A
/// one-shot stream: pruned with the challenges (`LogRetention.oneShotStreamTypes`).
public enum RateLimitLog: Aggregate {
    public static let streamType = "rate-limit"

    public struct State: Sendable, Equatable {
        public var trips = 0
    }

    public enum Command: Sendable {
        /// `policy`: the policy's name (`otp-request.mailbox`); `userID`: the person whose
        /// address the bucket counts, when it counts one and the address has an account.
        case recordTrip(policy: String, retryAfterSeconds: Int, userID: UUID?)
    }

    public static let initialState = State()

    /// The least time between two recorded trips of one bucket.
    public static let tripInterval: TimeInterval = 300

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [RateLimitLogEvent] {
        switch command {
        case .recordTrip(let policy, let retryAfter, let userID):
            guard (1...64).contains(policy.utf8.count) else { throw DomainError("RateLimitLog.Invalid", "A policy name is 1 to 64 bytes.") }
            return [.tripped(RateLimitTripped(policy: policy, retryAfterSeconds: max(0, retryAfter), userID: userID))]
        }
    }

    public static func evolve(_ state: State, _ event: RateLimitLogEvent) -> State {
        var next = state
        next.trips += 1
        return next
    }
}

/// rate_limit.tripped: a bucket began refusing requests. The request's address and user
/// agent are in the metadata (sealed under the day key like every event's).
public struct RateLimitTripped: DomainEvent, Equatable {
    public static let eventType = "rate_limit.tripped"
    public var policy: String
    /// How long the refused caller was told to wait.
    public var retryAfterSeconds: Int
    /// The account of the counted address, if any (never an address without one: no
    /// enumeration through the console).
    public var userID: UUID?

    public init(policy: String, retryAfterSeconds: Int, userID: UUID?) {
        self.policy = policy
        self.retryAfterSeconds = retryAfterSeconds
        self.userID = userID
    }
}

/// The events of a rate-limit log stream.
public enum RateLimitLogEvent: AggregateEvent, Equatable {
    case tripped(RateLimitTripped)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .tripped(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as RateLimitTripped: self = .tripped(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "rate-limit")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(RateLimitTripped.self)
    }
}
