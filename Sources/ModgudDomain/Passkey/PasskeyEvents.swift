import EventSourcing
import Foundation

/// passkey.enrolled: everything needed to verify later assertions. The public key and the
/// credential id are public by nature; nothing secret is stored.
public struct PasskeyEnrolled: DomainEvent, Equatable {
    public static let eventType = "passkey.enrolled"
    public var passkeyID: UUID
    public var userID: UUID
    /// base64url of the WebAuthn credential id.
    public var credentialID: String
    /// The RP-ID it was enrolled under: it verifies under that RP-ID only.
    public var rpID: String
    /// base64url of the COSE_Key.
    public var publicKey: String
    /// COSE algorithm number (-7 ES256, -8 EdDSA, -257 RS256, …).
    public var algorithm: Int
    public var signCount: UInt32
    /// base64url of the 16-byte AAGUID.
    public var aaguid: String
    public var backupEligible: Bool
    public var backedUp: Bool
    public var transports: [String]
    public var attestationFormat: String
    /// Sealed under the owner's data key (issue 22: a label the user types may hold a name);
    /// plain in events written before.
    public var displayName: PersonalText
    /// The client whose bearer token enrolled it.
    public var clientID: String?
    public var createdAt: Date

    public init(
        passkeyID: UUID, userID: UUID, credentialID: String, rpID: String, publicKey: String, algorithm: Int, signCount: UInt32, aaguid: String,
        backupEligible: Bool, backedUp: Bool, transports: [String], attestationFormat: String, displayName: PersonalText, clientID: String?,
        createdAt: Date
    ) {
        self.passkeyID = passkeyID
        self.userID = userID
        self.credentialID = credentialID
        self.rpID = rpID
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signCount = signCount
        self.aaguid = aaguid
        self.backupEligible = backupEligible
        self.backedUp = backedUp
        self.transports = transports
        self.attestationFormat = attestationFormat
        self.displayName = displayName
        self.clientID = clientID
        self.createdAt = createdAt
    }
}

/// passkey.used: a verified sign-in.
public struct PasskeyUsed: DomainEvent, Equatable {
    public static let eventType = "passkey.used"
    public var signCount: UInt32
    public var backedUp: Bool
    public var usedAt: Date

    public init(signCount: UInt32, backedUp: Bool, usedAt: Date) {
        self.signCount = signCount
        self.backedUp = backedUp
        self.usedAt = usedAt
    }
}

/// passkey.clone_suspected: the sign count did not increase (a cloned authenticator, or a
/// replayed assertion). The sign-in was refused.
public struct PasskeyCloneSuspected: DomainEvent, Equatable {
    public static let eventType = "passkey.clone_suspected"
    public var storedSignCount: UInt32
    public var receivedSignCount: UInt32

    public init(storedSignCount: UInt32, receivedSignCount: UInt32) {
        self.storedSignCount = storedSignCount
        self.receivedSignCount = receivedSignCount
    }
}

/// passkey.assertion_failed: a sign-in with this passkey was refused (issue 43: a sign-in
/// failure in its owner's history): a wrong signature, origin or RP-ID, user verification
/// missing. `reason` is the verifier's code (`WebAuthnError.reason`), or `rp_id_mismatch`
/// for a ceremony under another RP-ID than the passkey's. Each costs the caller a ceremony
/// (single use, rate limited): the log grows no faster than sign-in attempts.
public struct PasskeyAssertionFailed: DomainEvent, Equatable {
    public static let eventType = "passkey.assertion_failed"
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }
}

/// passkey.renamed: its owner (or an administrator) gave it a new name.
public struct PasskeyRenamed: DomainEvent, Equatable {
    public static let eventType = "passkey.renamed"
    /// Sealed under the owner's data key; plain in events written before issue 22.
    public var displayName: PersonalText
    public var by: String

    public init(displayName: PersonalText, by: String) {
        self.displayName = displayName
        self.by = by
    }
}

/// passkey.deleted
public struct PasskeyDeleted: DomainEvent, Equatable {
    public static let eventType = "passkey.deleted"
    public var by: String

    public init(by: String) { self.by = by }
}

/// The events of a passkey stream.
public enum PasskeyEvent: AggregateEvent, Equatable {
    case enrolled(PasskeyEnrolled)
    case used(PasskeyUsed)
    case cloneSuspected(PasskeyCloneSuspected)
    case deleted(PasskeyDeleted)
    case renamed(PasskeyRenamed)
    case assertionFailed(PasskeyAssertionFailed)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .enrolled(let event): return try NewEvent(event)
        case .used(let event): return try NewEvent(event)
        case .cloneSuspected(let event): return try NewEvent(event)
        case .deleted(let event): return try NewEvent(event)
        case .renamed(let event): return try NewEvent(event)
        case .assertionFailed(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as PasskeyEnrolled: self = .enrolled(event)
        case let event as PasskeyUsed: self = .used(event)
        case let event as PasskeyCloneSuspected: self = .cloneSuspected(event)
        case let event as PasskeyDeleted: self = .deleted(event)
        case let event as PasskeyRenamed: self = .renamed(event)
        case let event as PasskeyAssertionFailed: self = .assertionFailed(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "passkey")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(PasskeyEnrolled.self)
        registry.register(PasskeyUsed.self)
        registry.register(PasskeyCloneSuspected.self)
        registry.register(PasskeyDeleted.self)
        registry.register(PasskeyRenamed.self)
        registry.register(PasskeyAssertionFailed.self)
    }
}
