import EventSourcing
import Foundation

/// device_authorization.requested: a device asked to sign a user in (RFC 8628 section 3.1).
/// The device code's secret and the user code are kept only as hashes (the user code's is
/// keyed, since its space is small). What the device says of itself and the network it asked
/// from are not in the log: they are personal data with no subject yet, kept in the
/// short-lived `device_authorizations` row until shown at approval.
public struct DeviceAuthorizationRequested: DomainEvent, Equatable {
    public static let eventType = "device_authorization.requested"
    public var authorizationID: UUID
    public var clientID: String
    /// The scopes granted to the request (the client's allowed ones it asked for).
    public var scopes: [String]
    /// The `resource` indicators it asked for (RFC 8707): the sign-in's audiences come from them.
    public var resources: [String]
    /// SHA-256 of the device code's secret part, base64url.
    public var deviceSecretHash: String
    /// HMAC of the normalised user code under the server's user-code key, base64url.
    public var userCodeHash: String
    public var expiresAt: Date
    /// The polling interval in seconds (section 3.2; 5 unless the server asks for more).
    public var interval: Int

    public init(
        authorizationID: UUID, clientID: String, scopes: [String], resources: [String], deviceSecretHash: String, userCodeHash: String,
        expiresAt: Date, interval: Int
    ) {
        self.authorizationID = authorizationID
        self.clientID = clientID
        self.scopes = scopes
        self.resources = resources
        self.deviceSecretHash = deviceSecretHash
        self.userCodeHash = userCodeHash
        self.expiresAt = expiresAt
        self.interval = interval
    }
}

/// device_authorization.approved: the user approved it with a user-verified passkey assertion.
public struct DeviceAuthorizationApproved: DomainEvent, Equatable {
    public static let eventType = "device_authorization.approved"
    public var authorizationID: UUID
    public var userID: UUID
    /// When and how the user proved it was them (the tokens' `auth_time` and `amr`).
    public var authTime: Date
    public var amr: [String]
    /// `app` (the signed-in app's API) or `web` (the realm's page).
    public var via: String

    public init(authorizationID: UUID, userID: UUID, authTime: Date, amr: [String], via: String) {
        self.authorizationID = authorizationID
        self.userID = userID
        self.authTime = authTime
        self.amr = amr
        self.via = via
    }
}

/// device_authorization.denied: the user said they did not start it.
public struct DeviceAuthorizationDenied: DomainEvent, Equatable {
    public static let eventType = "device_authorization.denied"
    public var authorizationID: UUID
    public var userID: UUID?

    public init(authorizationID: UUID, userID: UUID?) {
        self.authorizationID = authorizationID
        self.userID = userID
    }
}

/// device_authorization.redeemed: the device's poll got the tokens (once).
public struct DeviceAuthorizationRedeemed: DomainEvent, Equatable {
    public static let eventType = "device_authorization.redeemed"
    public var authorizationID: UUID
    public var familyID: UUID

    public init(authorizationID: UUID, familyID: UUID) {
        self.authorizationID = authorizationID
        self.familyID = familyID
    }
}

/// The events of a device authorization stream.
public enum DeviceAuthorizationEvent: AggregateEvent, Equatable {
    case requested(DeviceAuthorizationRequested)
    case approved(DeviceAuthorizationApproved)
    case denied(DeviceAuthorizationDenied)
    case redeemed(DeviceAuthorizationRedeemed)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .requested(let event): return try NewEvent(event)
        case .approved(let event): return try NewEvent(event)
        case .denied(let event): return try NewEvent(event)
        case .redeemed(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as DeviceAuthorizationRequested: self = .requested(event)
        case let event as DeviceAuthorizationApproved: self = .approved(event)
        case let event as DeviceAuthorizationDenied: self = .denied(event)
        case let event as DeviceAuthorizationRedeemed: self = .redeemed(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "device-authorization")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(DeviceAuthorizationRequested.self)
        registry.register(DeviceAuthorizationApproved.self)
        registry.register(DeviceAuthorizationDenied.self)
        registry.register(DeviceAuthorizationRedeemed.self)
    }
}
