import EventSourcing
import Foundation

/// passkey_ceremony.begun: a challenge went to an app. The challenge is not a secret (the
/// app holds it in the clear); single use is what protects it.
public struct PasskeyCeremonyBegun: DomainEvent, Equatable {
    public static let eventType = "passkey_ceremony.begun"
    public var ceremonyID: UUID
    public var kind: PasskeyCeremony.Kind
    /// base64url of the 32 random bytes.
    public var challenge: String
    public var rpID: String
    public var clientID: String?
    public var userID: UUID?
    public var expiresAt: Date
    /// Sign-up only: the id the new user will have (also the WebAuthn user handle), and the
    /// address and names sealed under that user's data key (issue 13), copied unopened into
    /// `user.registered` when the ceremony is redeemed.
    public var registrantID: UUID?
    public var email: PersonalText?
    public var firstName: PersonalText?
    public var lastName: PersonalText?
    /// Enrollment only: begun for an automatic upgrade (WebAuthn L3 conditional create, issue
    /// 46), right after a sign-in by another factor. Only such a ceremony accepts a
    /// registration without user presence (§7.1 step 14). Nil: an ordinary ceremony.
    public var conditional: Bool?
    /// The attested instance key of the request that began it (issue 65); nil: not attested,
    /// and in older events.
    public var attestedKey: String?
    /// Device approval only (issue 69): the device authorization the assertion approves. A
    /// ceremony approves that one authorization and nothing else.
    public var deviceAuthorizationID: UUID?

    /// Who may redeem it: the client that began it (if any) and its attested instance
    /// (`FlowBinding.admits`).
    public var binding: FlowBinding { FlowBinding(clientID: clientID, attestedKey: attestedKey) }

    public init(
        ceremonyID: UUID, kind: PasskeyCeremony.Kind, challenge: String, rpID: String, clientID: String?, userID: UUID?, expiresAt: Date,
        registrantID: UUID? = nil, email: PersonalText? = nil, firstName: PersonalText? = nil, lastName: PersonalText? = nil,
        conditional: Bool? = nil, attestedKey: String? = nil, deviceAuthorizationID: UUID? = nil
    ) {
        self.deviceAuthorizationID = deviceAuthorizationID
        self.attestedKey = attestedKey
        self.conditional = conditional
        self.ceremonyID = ceremonyID
        self.kind = kind
        self.challenge = challenge
        self.rpID = rpID
        self.clientID = clientID
        self.userID = userID
        self.expiresAt = expiresAt
        self.registrantID = registrantID
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
    }
}

/// passkey_ceremony.consumed: redeemed (whatever the verification then says).
public struct PasskeyCeremonyConsumed: DomainEvent, Equatable {
    public static let eventType = "passkey_ceremony.consumed"
    public var ceremonyID: UUID

    public init(ceremonyID: UUID) { self.ceremonyID = ceremonyID }
}

/// The events of a passkey ceremony stream.
public enum PasskeyCeremonyEvent: AggregateEvent, Equatable {
    case begun(PasskeyCeremonyBegun)
    case consumed(PasskeyCeremonyConsumed)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .begun(let event): return try NewEvent(event)
        case .consumed(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as PasskeyCeremonyBegun: self = .begun(event)
        case let event as PasskeyCeremonyConsumed: self = .consumed(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "passkey-ceremony")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(PasskeyCeremonyBegun.self)
        registry.register(PasskeyCeremonyConsumed.self)
    }
}
