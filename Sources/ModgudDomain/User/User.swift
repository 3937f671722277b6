import Foundation

/// A person who signs in to a realm.
public enum User: Aggregate {
    public static let streamType = "user"

    public enum Status: String, Codable, Sendable {
        case active, disabled, deleted
    }

    public struct State: Sendable, Equatable {
        public var id: UUID?
        public var email: EmailAddress?
        public var emailConfirmed = false
        public var username: String?
        public var firstName: String?
        public var lastName: String?
        public var encryptedTOTPSecret: String?
        public var securityStamp = ""
        public var status = Status.active

        public var exists: Bool { id != nil }
        /// Whether the account may sign in or refresh.
        public var canSignIn: Bool { exists && status == .active }
    }

    public enum Command: Sendable {
        case register(
            id: UUID, email: EmailAddress, emailConfirmed: Bool, username: String?, firstName: String?, lastName: String?,
            securityStamp: String, via: String)
        case changeProfile(username: String?, firstName: String?, lastName: String?)
        case confirmEmail
        case enableTOTP(encryptedSecret: String)
        case disableTOTP
        /// "Log out everywhere" and its kin: a new stamp kills every earlier refresh token.
        case rotateSecurityStamp(newStamp: String, reason: StampRotationReason)
        case disable(newStamp: String)
        case enable
        case delete(newStamp: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [UserEvent] {
        if case .register(let id, let email, let confirmed, let username, let firstName, let lastName, let stamp, let via) = command {
            guard !state.exists else { throw DomainError("User.AlreadyExists", "The user already exists.") }
            return [
                .registered(
                    UserRegistered(
                        userID: id, email: email, emailConfirmed: confirmed, username: clean(username), firstName: clean(firstName),
                        lastName: clean(lastName), securityStamp: stamp, via: via))
            ]
        }
        guard state.exists else { throw DomainError("User.NotFound", "No such user.") }
        guard state.status != .deleted else { throw DomainError("User.Deleted", "The user was deleted.") }
        switch command {
        case .register:
            return []
        case .changeProfile(let username, let firstName, let lastName):
            let changed = UserProfileChanged(username: clean(username), firstName: clean(firstName), lastName: clean(lastName))
            guard changed.username != state.username || changed.firstName != state.firstName || changed.lastName != state.lastName else {
                return []
            }
            return [.profileChanged(changed)]
        case .confirmEmail:
            return state.emailConfirmed ? [] : [.emailConfirmed(UserEmailConfirmed())]
        case .enableTOTP(let secret):
            guard state.encryptedTOTPSecret == nil else { throw DomainError("TOTP.AlreadyEnabled", "Two-factor is already on.") }
            return [.totpEnabled(UserTOTPEnabled(encryptedSecret: secret))]
        case .disableTOTP:
            return state.encryptedTOTPSecret == nil ? [] : [.totpDisabled(UserTOTPDisabled())]
        case .rotateSecurityStamp(let stamp, let reason):
            return [.securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: reason))]
        case .disable(let stamp):
            guard state.status == .active else { return [] }
            return [.disabled(UserDisabled()), .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .disabled))]
        case .enable:
            return state.status == .disabled ? [.enabled(UserEnabled())] : []
        case .delete(let stamp):
            return [.deleted(UserDeleted()), .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .deleted))]
        }
    }

    private static func clean(_ value: String?) -> String? {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return String(trimmed.prefix(200))
    }

    public static func evolve(_ state: State, _ event: UserEvent) -> State {
        var next = state
        switch event {
        case .registered(let registered):
            next.id = registered.userID
            next.email = registered.email
            next.emailConfirmed = registered.emailConfirmed
            next.username = registered.username
            next.firstName = registered.firstName
            next.lastName = registered.lastName
            next.securityStamp = registered.securityStamp
        case .profileChanged(let changed):
            next.username = changed.username
            next.firstName = changed.firstName
            next.lastName = changed.lastName
        case .emailConfirmed: next.emailConfirmed = true
        case .totpEnabled(let enabled): next.encryptedTOTPSecret = enabled.encryptedSecret
        case .totpDisabled: next.encryptedTOTPSecret = nil
        case .securityStampRotated(let rotated): next.securityStamp = rotated.securityStamp
        case .disabled: next.status = .disabled
        case .enabled: next.status = .active
        case .deleted: next.status = .deleted
        }
        return next
    }
}
