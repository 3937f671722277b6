import EventSourcing
import Foundation

/// authorization_session.begun: a client began a first-party sign-in (the draft's first
/// Authorization Challenge request). No address: the session of an address that has no account
/// looks the same as any other (the uniform answer holds in the log too).
public struct AuthorizationSessionBegun: DomainEvent, Equatable {
    public static let eventType = "authorization_session.begun"
    public var sessionID: UUID
    public var clientID: String
    public var factor: AuthorizationSession.Factor
    /// Whether the session is bound to the DPoP key of its first request (the draft's DPoP section).
    public var dpopBound: Bool
    /// The person, for a re-authorization session (nil while the sign-in names nobody yet).
    public var userID: UUID?
    public var expiresAt: Date

    public init(sessionID: UUID, clientID: String, factor: AuthorizationSession.Factor, dpopBound: Bool, userID: UUID? = nil, expiresAt: Date) {
        self.sessionID = sessionID
        self.clientID = clientID
        self.factor = factor
        self.dpopBound = dpopBound
        self.userID = userID
        self.expiresAt = expiresAt
    }
}

/// authorization_session.code_issued: the factor (and a second one when owed) was proven; the
/// sign-in it made is handed over by an authorization code, which ends the session.
public struct AuthorizationCodeIssued: DomainEvent, Equatable {
    public static let eventType = "authorization_session.code_issued"
    public var sessionID: UUID
    public var userID: UUID
    /// The sign-in (token family) the code stands for.
    public var familyID: UUID
    public var expiresAt: Date

    public init(sessionID: UUID, userID: UUID, familyID: UUID, expiresAt: Date) {
        self.sessionID = sessionID
        self.userID = userID
        self.familyID = familyID
        self.expiresAt = expiresAt
    }
}

/// authorization_session.code_redeemed: the code was presented at the token endpoint and spent,
/// whatever followed; `refusal` says why it gave no tokens, when it gave none.
public struct AuthorizationCodeRedeemed: DomainEvent, Equatable {
    public static let eventType = "authorization_session.code_redeemed"

    /// Why a presented code gave no tokens (RFC 6749 section 4.1.3; RFC 7636 section 4.6; RFC
    /// 9449 section 10): every one is the same `invalid_grant` to the client.
    public enum Refusal: String, Codable, Sendable {
        case expired
        case otherClient = "other_client"
        case wrongVerifier = "wrong_verifier"
        case otherKey = "other_key"
    }

    public var refusal: Refusal?

    public init(refusal: Refusal?) { self.refusal = refusal }
}

/// authorization_session.continued: a re-authorization session (the `auth_session` of a token
/// response, the draft's section 6.1) was presented for a step-up: it is spent, and the sign-in
/// session it began takes over.
public struct AuthorizationSessionContinued: DomainEvent, Equatable {
    public static let eventType = "authorization_session.continued"
    public var nextSessionID: UUID

    public init(nextSessionID: UUID) { self.nextSessionID = nextSessionID }
}

/// The events of an authorization session stream.
public enum AuthorizationSessionEvent: AggregateEvent, Equatable {
    case begun(AuthorizationSessionBegun)
    case codeIssued(AuthorizationCodeIssued)
    case codeRedeemed(AuthorizationCodeRedeemed)
    case continued(AuthorizationSessionContinued)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .begun(let event): return try NewEvent(event)
        case .codeIssued(let event): return try NewEvent(event)
        case .codeRedeemed(let event): return try NewEvent(event)
        case .continued(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as AuthorizationSessionBegun: self = .begun(event)
        case let event as AuthorizationCodeIssued: self = .codeIssued(event)
        case let event as AuthorizationCodeRedeemed: self = .codeRedeemed(event)
        case let event as AuthorizationSessionContinued: self = .continued(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "authorization-session")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(AuthorizationSessionBegun.self)
        registry.register(AuthorizationCodeIssued.self)
        registry.register(AuthorizationCodeRedeemed.self)
        registry.register(AuthorizationSessionContinued.self)
    }
}
