import EventSourcing
import Foundation

/// realm.created
public struct RealmCreated: DomainEvent, Equatable {
    public static let eventType = "realm.created"
    public var realmID: String
    public var settings: RealmSettings

    public init(realmID: String, settings: RealmSettings) {
        self.realmID = realmID
        self.settings = settings
    }
}

/// realm.settings_changed: the complete settings after the change.
public struct RealmSettingsChanged: DomainEvent, Equatable {
    public static let eventType = "realm.settings_changed"
    public var settings: RealmSettings

    public init(settings: RealmSettings) {
        self.settings = settings
    }
}

/// realm.signing_key_rotated: the new key's public part and id; the private key never
/// enters an event (it is stored encrypted elsewhere).
public struct SigningKeyRotated: DomainEvent, Equatable {
    public static let eventType = "realm.signing_key_rotated"
    public var kid: String
    /// `ES256`, `RS256` or `EdDSA`.
    public var algorithm: String
    /// The public key as a JWK (JSON text).
    public var publicJWK: String
    public var rotatedAt: Date

    public init(kid: String, algorithm: String, publicJWK: String, rotatedAt: Date) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicJWK = publicJWK
        self.rotatedAt = rotatedAt
    }
}

/// realm.signing_key_retired: a rotated-out key leaves the JWKS and its private key is
/// destroyed; tokens it signed no longer verify.
public struct SigningKeyRetired: DomainEvent, Equatable {
    public static let eventType = "realm.signing_key_retired"
    public var kid: String
    public var retiredAt: Date
    /// Retired before the overlap had passed (a key believed compromised).
    public var forced: Bool

    public init(kid: String, retiredAt: Date, forced: Bool) {
        self.kid = kid
        self.retiredAt = retiredAt
        self.forced = forced
    }
}

/// The events of a realm.
public enum RealmEvent: AggregateEvent, Equatable {
    case created(RealmCreated)
    case settingsChanged(RealmSettingsChanged)
    case signingKeyRotated(SigningKeyRotated)
    case signingKeyRetired(SigningKeyRetired)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .created(let event): return try NewEvent(event)
        case .settingsChanged(let event): return try NewEvent(event)
        case .signingKeyRotated(let event): return try NewEvent(event)
        case .signingKeyRetired(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as RealmCreated: self = .created(event)
        case let event as RealmSettingsChanged: self = .settingsChanged(event)
        case let event as SigningKeyRotated: self = .signingKeyRotated(event)
        case let event as SigningKeyRetired: self = .signingKeyRetired(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "realm")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(RealmCreated.self)
        registry.register(RealmSettingsChanged.self)
        registry.register(SigningKeyRotated.self)
        registry.register(SigningKeyRetired.self)
    }
}
