import EventSourcing
import Foundation

/// What a challenge proves when redeemed.
public enum ChallengePurpose: String, Codable, Hashable, Sendable {
    /// A sign-in code for an existing user.
    case loginCode = "login_code"
    /// A registration code: redeeming it creates the user (no user exists before proof).
    case registrationCode = "registration_code"
    /// A magic link token for an existing user.
    case magicLink = "magic_link"
    /// A code that proves a signed-up user's address (issue 14): redeeming it confirms it.
    case emailConfirmation = "email_confirmation"
}

/// challenge.issued: a code or link went out. Only its hash is kept.
///
/// Personal data (issue 13): a login code or magic link names its user and carries no address.
/// A registration code carries the address and names sealed under the key of the user it will
/// create (`registrantID`, chosen now), so the registration copies them unopened and erasing
/// that address shreds them with the rest.
public struct ChallengeIssued: DomainEvent, Equatable {
    public static let eventType = "challenge.issued"
    public var challengeID: UUID
    public var purpose: ChallengePurpose
    /// Registration codes only (and every legacy event, plain).
    public var email: PersonalText?
    public var userID: UUID?
    /// The id the user gets when a registration code is redeemed; its key seals the fields.
    public var registrantID: UUID?
    /// The names submitted with a registration request, kept for the user it creates.
    public var username: PersonalText?
    public var firstName: PersonalText?
    public var lastName: PersonalText?
    public var secretHash: String
    public var issuedAt: Date
    public var expiresAt: Date
    /// The client the request named, and its attested instance key (issue 65: `FlowBinding`);
    /// absent in older events and for a request that named no client.
    public var clientID: String?
    public var attestedKey: String?

    /// Who may redeem it (`FlowBinding.admits`).
    public var binding: FlowBinding {
        get { FlowBinding(clientID: clientID, attestedKey: attestedKey) }
        set { (clientID, attestedKey) = (newValue.clientID, newValue.attestedKey) }
    }

    public init(
        challengeID: UUID, purpose: ChallengePurpose, email: PersonalText? = nil, userID: UUID? = nil,
        registrantID: UUID? = nil, username: PersonalText? = nil, firstName: PersonalText? = nil, lastName: PersonalText? = nil,
        secretHash: String, issuedAt: Date, expiresAt: Date, binding: FlowBinding = .unbound
    ) {
        self.clientID = binding.clientID
        self.attestedKey = binding.attestedKey
        self.challengeID = challengeID
        self.purpose = purpose
        self.email = email
        self.userID = userID
        self.registrantID = registrantID
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
        self.secretHash = secretHash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// challenge.attempt_failed: a wrong code was presented (counted by the store, across instances).
public struct ChallengeAttemptFailed: DomainEvent, Equatable {
    public static let eventType = "challenge.attempt_failed"
    /// What was wrong.
    public enum Reason: String, Codable, Sendable {
        case wrongCode = "wrong_code"
        case wrongSecondFactor = "wrong_second_factor"
    }

    public var challengeID: UUID
    public var attempts: Int
    public var reason: Reason?

    public init(challengeID: UUID, attempts: Int, reason: Reason? = .wrongCode) {
        self.challengeID = challengeID
        self.attempts = attempts
        self.reason = reason
    }
}

/// challenge.burned: too many wrong guesses; the code never works again.
public struct ChallengeBurned: DomainEvent, Equatable {
    public static let eventType = "challenge.burned"
    public var challengeID: UUID

    public init(challengeID: UUID) { self.challengeID = challengeID }
}

/// challenge.consumed: the code or link was redeemed (single use).
public struct ChallengeConsumed: DomainEvent, Equatable {
    public static let eventType = "challenge.consumed"
    public var challengeID: UUID

    public init(challengeID: UUID) { self.challengeID = challengeID }
}

/// The events of an email challenge stream.
public enum EmailChallengeEvent: AggregateEvent, Equatable {
    case issued(ChallengeIssued)
    case attemptFailed(ChallengeAttemptFailed)
    case burned(ChallengeBurned)
    case consumed(ChallengeConsumed)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .issued(let event): return try NewEvent(event)
        case .attemptFailed(let event): return try NewEvent(event)
        case .burned(let event): return try NewEvent(event)
        case .consumed(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as ChallengeIssued: self = .issued(event)
        case let event as ChallengeAttemptFailed: self = .attemptFailed(event)
        case let event as ChallengeBurned: self = .burned(event)
        case let event as ChallengeConsumed: self = .consumed(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "email-challenge")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(ChallengeIssued.self)
        registry.register(ChallengeAttemptFailed.self)
        registry.register(ChallengeBurned.self)
        registry.register(ChallengeConsumed.self)
    }
}
