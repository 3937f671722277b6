import Foundation

/// A person who signs in to a realm.
public enum User: Aggregate {
    public static let streamType = "user"

    public enum Status: String, Codable, Sendable {
        case active, disabled, deleted, erased
    }

    public struct State: Sendable, Equatable {
        public var id: UUID?
        /// Sealed under the user's data key (legacy events: plain); nil once erased.
        public var email: PersonalText?
        public var emailConfirmed = false
        public var username: PersonalText?
        public var firstName: PersonalText?
        public var lastName: PersonalText?
        public var encryptedTOTPSecret: String?
        /// A secret handed out by enrollment, waiting for its first code.
        public var pendingTOTPSecret: String?
        /// The last TOTP time step accepted (a step is accepted once).
        public var lastTOTPStep: UInt64?
        public var securityStamp = ""
        public var status = Status.active
        /// The roles the server gives meaning to, sorted (issue 31: `operator`).
        public var roles: [String] = []
        /// The grant (or tool) that created the account (`user.registered`'s `via`).
        public var registeredVia: String?
        /// The current set of recovery codes (issue 46), nil without one.
        public var recoveryCodeSet: UUID?
        /// How many codes of the current set are unused.
        public var recoveryCodesLeft = 0
        /// The providers linked to this account (issue 48), by provider id.
        public var identities: Set<String> = []

        public var exists: Bool { id != nil }
        /// A live account made by passkey sign-up whose address nobody has proven yet (issue
        /// 14). Proof of the mailbox wins: a registration code for the address retires it.
        public var isUnprovenPasskeySignUp: Bool {
            exists && !emailConfirmed && registeredVia == User.passkeySignUpVia && status != .deleted && status != .erased
        }
        /// Whether the account may sign in or refresh.
        public var canSignIn: Bool { exists && status == .active }
    }

    public enum Command: Sendable {
        /// The personal fields come sealed (`PersonalDataVault`); names cleaned before sealing
        /// (`User.cleanName`).
        case register(
            id: UUID, email: PersonalText, emailConfirmed: Bool, username: PersonalText?, firstName: PersonalText?,
            lastName: PersonalText?, securityStamp: String, via: String)
        case changeProfile(username: PersonalText?, firstName: PersonalText?, lastName: PersonalText?)
        case confirmEmail
        /// Turns TOTP on directly (operator tooling that handed the secret over itself).
        case enableTOTP(encryptedSecret: String)
        /// Self-service enrollment, step 1: keep a secret until a code from it is confirmed.
        case beginTOTPEnrollment(encryptedSecret: String)
        /// Self-service enrollment, step 2: the pending secret produced a valid code at `step`.
        case confirmTOTPEnrollment(step: UInt64)
        /// A valid TOTP code at `step` was presented at sign-in: refused if that step (or a later
        /// one) was already used, so a code works once, decided by the store.
        case acceptTOTPStep(UInt64)
        case disableTOTP
        /// "Log out everywhere" and its kin: a new stamp kills every earlier refresh token.
        case rotateSecurityStamp(newStamp: String, reason: StampRotationReason)
        case disable(newStamp: String)
        case enable
        case delete(newStamp: String)
        /// Proof of the mailbox wins (issue 14): an unproven passkey sign-up is deleted when the
        /// address's owner redeems a registration code, in that code's transaction.
        case retireUnproven(newStamp: String)
        /// Erasure (issue 13): records that the data key is being deleted and kills every token.
        /// Allowed for deleted users too; a second erasure writes nothing.
        case erase(newStamp: String)
        /// Grants (`true`) or takes away (`false`) a role; no event when nothing changes.
        case setRole(String, granted: Bool)
        /// A new set of recovery codes replaces any earlier one (issue 46); `count` codes were
        /// stored under `setID` before the command.
        case generateRecoveryCodes(setID: UUID, count: Int)
        /// A code of `setID` was spent (in the command's transaction, by the database).
        case useRecoveryCode(setID: UUID)
        /// The current set stops working; nothing when there is none.
        case revokeRecoveryCodes
        /// A user created by a provider's first sign-in, linked in the same append (issue 48).
        case registerLinked(UserRegistered, UserIdentityLinked)
        /// Links a provider's account (one per provider; the table's unique index decides which
        /// user a provider account is). `totpStep`: the second factor of the sign-in that links,
        /// spent with it.
        case linkIdentity(provider: String, subject: PersonalText, via: String, totpStep: UInt64?)
        case unlinkIdentity(provider: String, reason: String)
    }

    /// A role name: 1 to 64 of a-z, 0-9, `-`, `_`, `.` and `:`.
    public static func isRoleName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || [0x2d, 0x5f, 0x2e, 0x3a].contains($0) }
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [UserEvent] {
        if case .register(let id, let email, let confirmed, let username, let firstName, let lastName, let stamp, let via) = command {
            guard !state.exists else { throw DomainError.conflict("User.AlreadyExists", "The user already exists.") }
            return [
                .registered(
                    UserRegistered(
                        userID: id, email: email, emailConfirmed: confirmed, username: username, firstName: firstName,
                        lastName: lastName, securityStamp: stamp, via: via))
            ]
        }
        if case .registerLinked(let registered, let linked) = command {
            guard !state.exists else { throw DomainError.conflict("User.AlreadyExists", "The user already exists.") }
            return [.registered(registered), .identityLinked(linked)]
        }
        guard state.exists else { throw DomainError.notFound("User.NotFound", "No such user.") }
        if case .erase(let stamp) = command {
            guard state.status != .erased else { return [] }
            return [.erased(UserErased()), .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .erased))]
        }
        guard state.status != .deleted, state.status != .erased else { throw DomainError("User.Deleted", "The user was deleted.") }
        switch command {
        case .register, .registerLinked, .erase:
            return []
        case .changeProfile(let username, let firstName, let lastName):
            // Sealed texts differ on every sealing: the service compares the plaintext first.
            return [.profileChanged(UserProfileChanged(username: username, firstName: firstName, lastName: lastName))]
        case .confirmEmail:
            return state.emailConfirmed ? [] : [.emailConfirmed(UserEmailConfirmed())]
        case .enableTOTP, .beginTOTPEnrollment, .confirmTOTPEnrollment, .acceptTOTPStep, .disableTOTP:
            return try decideSecondFactor(command, state: state)
        case .generateRecoveryCodes, .useRecoveryCode, .revokeRecoveryCodes:
            return try decideRecoveryCodes(command, state: state)
        case .linkIdentity, .unlinkIdentity:
            return try decideIdentity(command, state: state)
        case .rotateSecurityStamp(let stamp, let reason):
            return [.securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: reason))]
        case .disable(let stamp):
            guard state.status == .active else { return [] }
            return [.disabled(UserDisabled()), .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .disabled))]
        case .enable:
            return state.status == .disabled ? [.enabled(UserEnabled())] : []
        case .delete(let stamp):
            return [.deleted(UserDeleted()), .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .deleted))]
        case .setRole(let role, let granted):
            guard isRoleName(role) else { throw DomainError("User.InvalidRole", "A role is 1 to 64 of a-z, 0-9, -, _, . and :.") }
            guard state.roles.contains(role) != granted else { return [] }
            let roles = granted ? (state.roles + [role]).sorted() : state.roles.filter { $0 != role }
            return [.rolesChanged(UserRolesChanged(roles: roles))]
        case .retireUnproven(let stamp):
            guard state.isUnprovenPasskeySignUp else { throw DomainError("User.Proven", "The account's address is proven.") }
            return [
                .deleted(UserDeleted(reason: .mailboxProvenByAnother)),
                .securityStampRotated(UserSecurityStampRotated(securityStamp: stamp, reason: .deleted)),
            ]
        }
    }

    /// The TOTP commands of a live user: enrollment, steps (each usable once), turning it off.
    private static func decideSecondFactor(_ command: Command, state: State) throws(DomainError) -> [UserEvent] {
        switch command {
        case .enableTOTP(let secret):
            guard state.encryptedTOTPSecret == nil else { throw DomainError("TOTP.AlreadyEnabled", "Two-factor is already on.") }
            return [.totpEnabled(UserTOTPEnabled(encryptedSecret: secret))]
        case .beginTOTPEnrollment(let secret):
            guard state.encryptedTOTPSecret == nil else { throw DomainError("TOTP.AlreadyEnabled", "Two-factor is already on.") }
            return [.totpEnrollmentStarted(UserTOTPEnrollmentStarted(encryptedSecret: secret))]
        case .confirmTOTPEnrollment(let step):
            guard state.encryptedTOTPSecret == nil else { throw DomainError("TOTP.AlreadyEnabled", "Two-factor is already on.") }
            guard let pending = state.pendingTOTPSecret else {
                throw DomainError("TOTP.NoEnrollment", "Start the two-factor enrollment first.")
            }
            return [.totpEnabled(UserTOTPEnabled(encryptedSecret: pending)), .totpStepAccepted(UserTOTPStepAccepted(step: step))]
        case .acceptTOTPStep(let step):
            guard state.encryptedTOTPSecret != nil else { throw DomainError("TOTP.NotEnabled", "Two-factor is not on.") }
            if let last = state.lastTOTPStep, step <= last {
                throw DomainError("TOTP.StepUsed", "The two-factor code is invalid.")
            }
            return [.totpStepAccepted(UserTOTPStepAccepted(step: step))]
        case .disableTOTP:
            guard state.encryptedTOTPSecret != nil || state.pendingTOTPSecret != nil else { return [] }
            return [.totpDisabled(UserTOTPDisabled())]
        default:
            return []
        }
    }

    /// Recovery codes (issue 46): a set replaces the last one; a code is spent only from the
    /// current set of an account that may sign in.
    /// Issue 48: a provider's account linked to the user, or unlinked.
    private static func decideIdentity(_ command: Command, state: State) throws(DomainError) -> [UserEvent] {
        switch command {
        case .linkIdentity(let provider, let subject, let via, let step):
            guard !state.identities.contains(provider) else {
                throw DomainError.conflict("User.IdentityLinked", "A \(provider) account is linked to this user already.")
            }
            let linked = UserEvent.identityLinked(UserIdentityLinked(provider: provider, subject: subject, via: via))
            guard let step else { return [linked] }
            return [linked] + (try decideSecondFactor(.acceptTOTPStep(step), state: state))
        case .unlinkIdentity(let provider, let reason):
            return state.identities.contains(provider) ? [.identityUnlinked(UserIdentityUnlinked(provider: provider, reason: reason))] : []
        default:
            return []
        }
    }

    private static func decideRecoveryCodes(_ command: Command, state: State) throws(DomainError) -> [UserEvent] {
        switch command {
        case .generateRecoveryCodes(let setID, let count):
            guard state.canSignIn else { throw DomainError("User.CannotSignIn", "The account cannot sign in.") }
            return [.recoveryCodesGenerated(UserRecoveryCodesGenerated(setID: setID, count: count, replaced: state.recoveryCodeSet))]
        case .useRecoveryCode(let setID):
            guard state.canSignIn, state.recoveryCodeSet == setID, state.recoveryCodesLeft > 0 else {
                throw DomainError("RecoveryCode.Invalid", "Invalid recovery code.")
            }
            return [.recoveryCodeUsed(UserRecoveryCodeUsed(setID: setID, remaining: state.recoveryCodesLeft - 1))]
        case .revokeRecoveryCodes:
            guard let current = state.recoveryCodeSet else { return [] }
            return [.recoveryCodesRevoked(UserRecoveryCodesRevoked(setID: current))]
        default:
            return []
        }
    }

    /// `user.registered`'s `via` for an account made by passkey sign-up.
    public static let passkeySignUpVia = "urn:cocoar:passkey"

    /// A name as kept: trimmed, at most 200 characters, nil when empty.
    public static func cleanName(_ value: String?) -> String? {
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
            next.registeredVia = registered.via
        case .profileChanged(let changed):
            next.username = changed.username
            next.firstName = changed.firstName
            next.lastName = changed.lastName
        case .emailConfirmed: next.emailConfirmed = true
        case .totpEnabled(let enabled):
            next.encryptedTOTPSecret = enabled.encryptedSecret
            next.pendingTOTPSecret = nil
        case .totpEnrollmentStarted(let started): next.pendingTOTPSecret = started.encryptedSecret
        case .totpStepAccepted(let accepted): next.lastTOTPStep = accepted.step
        case .totpDisabled:
            next.encryptedTOTPSecret = nil
            next.pendingTOTPSecret = nil
        case .securityStampRotated(let rotated): next.securityStamp = rotated.securityStamp
        case .disabled: next.status = .disabled
        case .enabled: next.status = .active
        case .deleted: next.status = .deleted
        case .rolesChanged(let changed): next.roles = changed.roles
        case .recoveryCodesGenerated(let generated):
            next.recoveryCodeSet = generated.setID
            next.recoveryCodesLeft = generated.count
        case .recoveryCodeUsed(let used):
            next.recoveryCodesLeft = used.remaining
            if used.remaining == 0 { next.recoveryCodeSet = nil }
        case .recoveryCodesRevoked:
            next.recoveryCodeSet = nil
            next.recoveryCodesLeft = 0
        case .identityLinked(let linked): next.identities.insert(linked.provider)
        case .identityUnlinked(let unlinked): next.identities.remove(unlinked.provider)
        case .erased:
            next.status = .erased
            next.email = nil
            next.username = nil
            next.firstName = nil
            next.lastName = nil
            next.encryptedTOTPSecret = nil
            next.pendingTOTPSecret = nil
            next.recoveryCodeSet = nil
            next.recoveryCodesLeft = 0
            next.identities = []
        }
        return next
    }
}
