import EventSourcing
import Foundation

/// user.registered. The address and names are sealed under the user's data key (issue 13):
/// erasing the user deletes that key, and with it every copy. The address's blind index (how
/// the directory finds it) is not in the log: it sits beside the key (`subject_keys`) and goes
/// with it, so nothing in the log links an erased account to its address.
public struct UserRegistered: DomainEvent, Equatable {
    public static let eventType = "user.registered"
    public var userID: UUID
    public var email: PersonalText
    public var emailConfirmed: Bool
    public var username: PersonalText?
    public var firstName: PersonalText?
    public var lastName: PersonalText?
    public var securityStamp: String
    /// How the account came to be: `otp`, `magic`, `passkey`, `admin`.
    public var via: String

    public init(
        userID: UUID, email: PersonalText, emailConfirmed: Bool, username: PersonalText? = nil,
        firstName: PersonalText? = nil, lastName: PersonalText? = nil, securityStamp: String, via: String
    ) {
        self.userID = userID
        self.email = email
        self.emailConfirmed = emailConfirmed
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
        self.securityStamp = securityStamp
        self.via = via
    }
}

/// user.profile_changed: the names after the change, sealed under the user's data key.
public struct UserProfileChanged: DomainEvent, Equatable {
    public static let eventType = "user.profile_changed"
    public var username: PersonalText?
    public var firstName: PersonalText?
    public var lastName: PersonalText?

    public init(username: PersonalText? = nil, firstName: PersonalText? = nil, lastName: PersonalText? = nil) {
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
    }
}

/// user.email_confirmed
public struct UserEmailConfirmed: DomainEvent, Equatable {
    public static let eventType = "user.email_confirmed"

    public init() {}
}

/// user.totp_enabled: the TOTP secret encrypted under the master key (never in plaintext).
public struct UserTOTPEnabled: DomainEvent, Equatable {
    public static let eventType = "user.totp_enabled"
    public var encryptedSecret: String

    public init(encryptedSecret: String) {
        self.encryptedSecret = encryptedSecret
    }
}

/// user.totp_enrollment_started: a secret was handed to the user's authenticator app; it
/// takes effect only once a code from it is confirmed (encrypted, never in plaintext).
public struct UserTOTPEnrollmentStarted: DomainEvent, Equatable {
    public static let eventType = "user.totp_enrollment_started"
    public var encryptedSecret: String

    public init(encryptedSecret: String) {
        self.encryptedSecret = encryptedSecret
    }
}

/// user.totp_step_accepted: a TOTP time step was used; it is never accepted again (RFC 6238
/// section 5.2: "the verifier MUST NOT accept the second attempt of the same OTP").
public struct UserTOTPStepAccepted: DomainEvent, Equatable {
    public static let eventType = "user.totp_step_accepted"
    public var step: UInt64

    public init(step: UInt64) {
        self.step = step
    }
}

/// user.totp_disabled
public struct UserTOTPDisabled: DomainEvent, Equatable {
    public static let eventType = "user.totp_disabled"

    public init() {}
}

/// Why a security stamp changed.
public enum StampRotationReason: String, Codable, Hashable, Sendable {
    case logoutEverywhere = "logout_everywhere"
    case disabled
    case deleted
    case erased
    case admin
}

/// user.security_stamp_rotated: every refresh token issued before is dead.
public struct UserSecurityStampRotated: DomainEvent, Equatable {
    public static let eventType = "user.security_stamp_rotated"
    public var securityStamp: String
    public var reason: StampRotationReason

    public init(securityStamp: String, reason: StampRotationReason) {
        self.securityStamp = securityStamp
        self.reason = reason
    }
}

/// user.disabled
public struct UserDisabled: DomainEvent, Equatable {
    public static let eventType = "user.disabled"

    public init() {}
}

/// user.enabled
public struct UserEnabled: DomainEvent, Equatable {
    public static let eventType = "user.enabled"

    public init() {}
}

/// user.deleted
public struct UserDeleted: DomainEvent, Equatable {
    public static let eventType = "user.deleted"

    /// Why, when it was not an operator's decision.
    public enum Reason: String, Codable, Sendable {
        /// An unproven passkey sign-up, retired when the address's owner proved the mailbox.
        case mailboxProvenByAnother = "mailbox_proven_by_another"
    }

    public var reason: Reason?

    public init(reason: Reason? = nil) { self.reason = reason }
}

/// user.erased: the user's data key was deleted (GDPR Article 17). Every sealed field of the
/// user's earlier events is unreadable from now on; the history of what happened stays.
public struct UserErased: DomainEvent, Equatable {
    public static let eventType = "user.erased"

    public init() {}
}

/// user.roles_changed: the user's roles after the change (issue 31). Roles are names the server
/// gives meaning to (`operator`: may sign in to the operator console); they hold no personal data.
public struct UserRolesChanged: DomainEvent, Equatable {
    public static let eventType = "user.roles_changed"
    public var roles: [String]

    public init(roles: [String]) { self.roles = roles }
}

/// The events of a user.
public enum UserEvent: AggregateEvent, Equatable {
    case registered(UserRegistered)
    case profileChanged(UserProfileChanged)
    case emailConfirmed(UserEmailConfirmed)
    case totpEnabled(UserTOTPEnabled)
    case totpDisabled(UserTOTPDisabled)
    case totpEnrollmentStarted(UserTOTPEnrollmentStarted)
    case totpStepAccepted(UserTOTPStepAccepted)
    case securityStampRotated(UserSecurityStampRotated)
    case disabled(UserDisabled)
    case enabled(UserEnabled)
    case deleted(UserDeleted)
    case erased(UserErased)
    case rolesChanged(UserRolesChanged)
    case recoveryCodesGenerated(UserRecoveryCodesGenerated)
    case recoveryCodeUsed(UserRecoveryCodeUsed)
    case recoveryCodesRevoked(UserRecoveryCodesRevoked)
    case identityLinked(UserIdentityLinked)
    case identityUnlinked(UserIdentityUnlinked)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .registered(let event): return try NewEvent(event)
        case .profileChanged(let event): return try NewEvent(event)
        case .emailConfirmed(let event): return try NewEvent(event)
        case .totpEnabled(let event): return try NewEvent(event)
        case .totpDisabled(let event): return try NewEvent(event)
        case .totpEnrollmentStarted(let event): return try NewEvent(event)
        case .totpStepAccepted(let event): return try NewEvent(event)
        case .securityStampRotated(let event): return try NewEvent(event)
        case .disabled(let event): return try NewEvent(event)
        case .enabled(let event): return try NewEvent(event)
        case .deleted(let event): return try NewEvent(event)
        case .erased(let event): return try NewEvent(event)
        case .rolesChanged(let event): return try NewEvent(event)
        case .recoveryCodesGenerated(let event): return try NewEvent(event)
        case .recoveryCodeUsed(let event): return try NewEvent(event)
        case .recoveryCodesRevoked(let event): return try NewEvent(event)
        case .identityLinked(let event): return try NewEvent(event)
        case .identityUnlinked(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as UserRegistered: self = .registered(event)
        case let event as UserProfileChanged: self = .profileChanged(event)
        case let event as UserEmailConfirmed: self = .emailConfirmed(event)
        case let event as UserTOTPEnabled: self = .totpEnabled(event)
        case let event as UserTOTPDisabled: self = .totpDisabled(event)
        case let event as UserTOTPEnrollmentStarted: self = .totpEnrollmentStarted(event)
        case let event as UserTOTPStepAccepted: self = .totpStepAccepted(event)
        case let event as UserSecurityStampRotated: self = .securityStampRotated(event)
        case let event as UserDisabled: self = .disabled(event)
        case let event as UserEnabled: self = .enabled(event)
        case let event as UserDeleted: self = .deleted(event)
        case let event as UserErased: self = .erased(event)
        case let event as UserRolesChanged: self = .rolesChanged(event)
        case let event as UserRecoveryCodesGenerated: self = .recoveryCodesGenerated(event)
        case let event as UserRecoveryCodeUsed: self = .recoveryCodeUsed(event)
        case let event as UserRecoveryCodesRevoked: self = .recoveryCodesRevoked(event)
        case let event as UserIdentityLinked: self = .identityLinked(event)
        case let event as UserIdentityUnlinked: self = .identityUnlinked(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "user")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(UserRegistered.self)
        registry.register(UserProfileChanged.self)
        registry.register(UserEmailConfirmed.self)
        registry.register(UserTOTPEnabled.self)
        registry.register(UserTOTPDisabled.self)
        registry.register(UserTOTPEnrollmentStarted.self)
        registry.register(UserTOTPStepAccepted.self)
        registry.register(UserSecurityStampRotated.self)
        registry.register(UserDisabled.self)
        registry.register(UserEnabled.self)
        registry.register(UserDeleted.self)
        registry.register(UserErased.self)
        registry.register(UserRolesChanged.self)
        registry.register(UserRecoveryCodesGenerated.self)
        registry.register(UserRecoveryCodeUsed.self)
        registry.register(UserRecoveryCodesRevoked.self)
        registry.register(UserIdentityLinked.self)
        registry.register(UserIdentityUnlinked.self)
    }
}
