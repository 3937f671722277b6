import EventSourcing

/// client.registered. `secretHash` is the hash of the secret (never the secret).
public struct ClientRegistered: DomainEvent, Equatable {
    public static let eventType = "client.registered"
    public var clientID: String
    public var settings: ClientSettings
    public var secretHash: String?

    public init(clientID: String, settings: ClientSettings, secretHash: String? = nil) {
        self.clientID = clientID
        self.settings = settings
        self.secretHash = secretHash
    }
}

/// client.updated: the complete settings after the change, and the RP-ID before it (so that
/// passkeys enrolled under the old RP-ID can be flagged).
public struct ClientUpdated: DomainEvent, Equatable {
    public static let eventType = "client.updated"
    public var settings: ClientSettings
    public var previousRPID: String?

    public init(settings: ClientSettings, previousRPID: String? = nil) {
        self.settings = settings
        self.previousRPID = previousRPID
    }
}

/// client.disabled
public struct ClientDisabled: DomainEvent, Equatable {
    public static let eventType = "client.disabled"

    public init() {}
}

/// client.enabled
public struct ClientEnabled: DomainEvent, Equatable {
    public static let eventType = "client.enabled"

    public init() {}
}

/// client.secret_rotated (hash only).
public struct ClientSecretRotated: DomainEvent, Equatable {
    public static let eventType = "client.secret_rotated"
    public var secretHash: String

    public init(secretHash: String) {
        self.secretHash = secretHash
    }
}

/// client.deleted: the client and its id are retired; its tokens stop working at once.
public struct ClientDeleted: DomainEvent, Equatable {
    public static let eventType = "client.deleted"

    public init() {}
}

/// client.play_integrity_keys_set (issue 47): the Play Console's two keys for one of the
/// client's Android apps, with which the attester decrypts and verifies that app's Play
/// Integrity verdicts. The decryption key is sealed with the master key (`KeySealer`, bound to
/// the realm, client and package), never written in plaintext; the verification key is public.
public struct ClientPlayIntegrityKeysSet: DomainEvent, Equatable {
    public static let eventType = "client.play_integrity_keys_set"
    public var packageName: String
    public var keys: PlayIntegrityKeys

    public init(packageName: String, keys: PlayIntegrityKeys) {
        self.packageName = packageName
        self.keys = keys
    }
}

/// client.play_integrity_keys_removed: that app's Play Integrity verdicts are no longer accepted.
public struct ClientPlayIntegrityKeysRemoved: DomainEvent, Equatable {
    public static let eventType = "client.play_integrity_keys_removed"
    public var packageName: String

    public init(packageName: String) {
        self.packageName = packageName
    }
}

/// The events of a client.
public enum ClientEvent: AggregateEvent, Equatable {
    case registered(ClientRegistered)
    case updated(ClientUpdated)
    case disabled(ClientDisabled)
    case enabled(ClientEnabled)
    case secretRotated(ClientSecretRotated)
    case deleted(ClientDeleted)
    case playIntegrityKeysSet(ClientPlayIntegrityKeysSet)
    case playIntegrityKeysRemoved(ClientPlayIntegrityKeysRemoved)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .registered(let event): return try NewEvent(event)
        case .updated(let event): return try NewEvent(event)
        case .disabled(let event): return try NewEvent(event)
        case .enabled(let event): return try NewEvent(event)
        case .secretRotated(let event): return try NewEvent(event)
        case .deleted(let event): return try NewEvent(event)
        case .playIntegrityKeysSet(let event): return try NewEvent(event)
        case .playIntegrityKeysRemoved(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as ClientRegistered: self = .registered(event)
        case let event as ClientUpdated: self = .updated(event)
        case let event as ClientDisabled: self = .disabled(event)
        case let event as ClientEnabled: self = .enabled(event)
        case let event as ClientSecretRotated: self = .secretRotated(event)
        case let event as ClientDeleted: self = .deleted(event)
        case let event as ClientPlayIntegrityKeysSet: self = .playIntegrityKeysSet(event)
        case let event as ClientPlayIntegrityKeysRemoved: self = .playIntegrityKeysRemoved(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "client")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(ClientRegistered.self)
        registry.register(ClientUpdated.self)
        registry.register(ClientDisabled.self)
        registry.register(ClientEnabled.self)
        registry.register(ClientSecretRotated.self)
        registry.register(ClientDeleted.self)
        registry.register(ClientPlayIntegrityKeysSet.self)
        registry.register(ClientPlayIntegrityKeysRemoved.self)
    }
}
