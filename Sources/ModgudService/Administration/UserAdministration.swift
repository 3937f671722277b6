import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// User administration for the CLI, the admin API and the console: find, invite, list,
/// profile, the account actions, TOTP, passkeys, sessions, roles and erasure.
public struct UserAdministration: Sendable {
    let users: AggregateRegistry<User>
    let realms: AggregateRegistry<Realm>
    let families: AggregateRegistry<TokenFamily>
    let tokenTables: TokenTables
    let passkeyService: PasskeyService
    /// Personal data keys; nil in tools started without the master key.
    let vault: PersonalDataVault?
    /// Read by `UsersTable`.
    let pool: PQPool
    let eraser: UserEraser
    /// TOTP enrollment (throws without the master key).
    let totp: @Sendable () throws -> TOTPEnrollment
    /// Recovery codes (issue 46; throws without the master key).
    let recoveryCodes: @Sendable () throws -> RecoveryCodeService
    let now: @Sendable () -> Date

    /// A user by id or by email (deleted users by id only).
    public func find(realm: String, _ key: String) async throws -> UUID? {
        return try await ServiceRefusal.translating {
            if let id = UUID(uuidString: key) { return id }
            guard let email = EmailAddress(key) else { return nil }
            let vault = try requireVault()
            return try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool)
        }
    }

    /// A user as the admin API and CLI list them, the address opened.
    public struct UserSummary: Sendable, Equatable {
        public var id: UUID
        /// nil once erased.
        public var email: String?
        public var status: String
        /// In a listing: when the user registered and last signed in (nil: never, or not
        /// yet projected: `UserSignInsProjection` is asynchronous).
        public var registeredAt: Date? = nil
        public var lastSignInAt: Date? = nil
    }

    /// Creates a confirmed user with no password, ready to sign in by email code or magic link
    /// (an invitation: the operator vouches for the address).
    public func create(
        realm: String, email rawEmail: String, firstName: String? = nil, lastName: String? = nil, username: String? = nil,
        emailConfirmed: Bool = true, metadata: EventMetadata
    ) async throws -> UserSummary {
        return try await ServiceRefusal.translating {
            guard try await realms.actor(for: StreamNames.realm(realm)).current().state.exists else { throw DomainError.notFound("Realm.NotFound", "No realm \(realm).") }
            guard let email = EmailAddress(rawEmail) else { throw DomainError("Email.Invalid", "The email address is not valid.") }
            if try await find(realm: realm, email.value) != nil {
                throw DomainError.conflict("User.AlreadyExists", "A user with this email address exists.")
            }
            let vault = try requireVault()
            let id = UUID()
            // The key (with the address's blind index) is stored first: the users projection
            // copies the index from beside it. A registration that then fails leaves a key no
            // user has, which maintenance removes (`PersonalDataVault.shredAbandoned`).
            let key = try vault.newSubject(PersonalDataVault.userSubject(id), realm: realm, emailIndex: vault.blindIndex(email.value, realm: realm))
            _ = try await pool.query(key.insert)
            let state = try await users.actor(forNew: StreamNames.user(realm: realm, userID: id)).execute(
                .register(
                    id: id, email: .sealed(try key.seal(email.value)), emailConfirmed: emailConfirmed, username: try key.seal(User.cleanName(username)),
                    firstName: try key.seal(User.cleanName(firstName)), lastName: try key.seal(User.cleanName(lastName)),
                    securityStamp: UUID().uuidString, via: "admin"), now: now(), metadata: metadata
            ).state
            return UserSummary(id: id, email: email.value, status: state.status.rawValue)
        }
    }

    /// The realm's users, oldest first, addresses opened (each user's key comes with the row).
    public typealias UserPage = UserListPage

    public func list(realm: String, limit: Int = 1000, page: UserPage = .first, order: UserListOrder = .registered) async throws -> [UserSummary] {
        return try await ServiceRefusal.translating {
            var users: [UserSummary] = []
            for row in try await UsersTable.list(realm: realm, limit: limit, page: page, order: order, pool: pool) {
                users.append(try await summary(of: row))
            }
            return users
        }
    }

    /// A listed row with its address opened (its sealed key came with it).
    func summary(of row: UsersTable.Listed) async throws -> UserSummary {
        if let sealedKey = row.sealedKey {
            try vault?.adopt(sealedKey: sealedKey, subject: PersonalDataVault.userSubject(row.userID))
        }
        let stored = row.storedEmail.map(PersonalText.init(stored:))
        let email = try await vault?.open(stored) ?? stored.flatMap { if case .plain(let text) = $0 { text } else { nil } }
        return UserSummary(id: row.userID, email: email, status: row.status, registeredAt: row.registeredAt, lastSignInAt: row.lastSignInAt)
    }

    /// Whether the realm has this user (in any status but never registered).
    public func exists(realm: String, id: UUID) async throws -> Bool {
        try await ServiceRefusal.translating {
            try await state(realm: realm, id: id).exists
        }
    }

    /// How many users a realm has (every status).
    public func count(realm: String) async throws -> Int {
        try await ServiceRefusal.translating {
            try await UsersTable.count(realm: realm, pool: pool)
        }
    }

    /// A user's personal fields, opened.
    public func profile(realm: String, userID: UUID) async throws -> (state: User.State, profile: UserProfile) {
        return try await ServiceRefusal.translating {
            let state = try await state(realm: realm, id: userID)
            return (state, try await vault.profile(of: state))
        }
    }

    /// Erases a user by id or address (`UserEraser`).
    public func erase(realm: String, _ key: String, metadata: EventMetadata) async throws -> UserEraser.Outcome {
        try await ServiceRefusal.translating {
            try await eraser.erase(realm: realm, key, metadata: metadata)
        }
    }

    public enum UserAction: String, CaseIterable, Sendable {
        case disable, enable, logoutEverywhere = "logout-everywhere", delete
    }

    public func apply(_ action: UserAction, realm: String, userID: UUID, metadata: EventMetadata) async throws -> User.State {
        return try await ServiceRefusal.translating {
            let stamp = OpaqueToken.generate().hash
            let command: User.Command
            switch action {
            case .disable: command = .disable(newStamp: stamp)
            case .enable: command = .enable
            case .logoutEverywhere: command = .rotateSecurityStamp(newStamp: stamp, reason: .logoutEverywhere)
            case .delete: command = .delete(newStamp: stamp)
            }
            return try await users.actor(for: StreamNames.user(realm: realm, userID: userID)).execute(command, now: now(), metadata: metadata).state
        }
    }

    /// Turns TOTP on for a user with a new secret; hand the provisioning to the user.
    public func enableTOTP(realm: String, userID: UUID, metadata: EventMetadata) async throws -> TOTPEnrollment.Provisioning {
        return try await ServiceRefusal.translating {
            let issuer = try await realms.actor(for: StreamNames.realm(realm)).current().state.settings?.displayName ?? realm
            return try await totp().enableDirectly(realm: realm, userID: userID, issuer: issuer, metadata: metadata)
        }
    }

    /// Turns TOTP off (a lost authenticator, say).
    public func disableTOTP(realm: String, userID: UUID, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            try await totp().disable(realm: realm, userID: userID, metadata: metadata)
        }
    }

    /// How many recovery codes the user has left (issue 46; never a code).
    public func recoveryCodeStatus(realm: String, userID: UUID) async throws -> RecoveryCodeService.Status {
        try await ServiceRefusal.translating {
            try await recoveryCodes().status(realm: realm, userID: userID)
        }
    }

    /// Revokes the user's recovery codes (a lost printout, say); false when there were none.
    public func revokeRecoveryCodes(realm: String, userID: UUID, metadata: EventMetadata) async throws -> Bool {
        try await ServiceRefusal.translating {
            try await recoveryCodes().revoke(realm: realm, userID: userID, metadata: metadata)
        }
    }

    // MARK: Passkeys

    /// A user's live passkeys.
    public func passkeys(realm: String, userID: UUID) async throws -> [PasskeyService.Summary] {
        try await ServiceRefusal.translating {
            try await passkeyService.list(realm: realm, userID: userID)
        }
    }

    /// Revokes one of a user's passkeys; false when the user has no such passkey.
    public func revokePasskey(realm: String, userID: UUID, passkeyID: UUID, metadata: EventMetadata) async throws -> Bool {
        try await ServiceRefusal.translating {
            try await passkeyService.delete(realm: realm, userID: userID, passkeyID: passkeyID, by: metadata.actor ?? "admin", metadata: metadata)
        }
    }

    /// A user's state (any status; `exists` false for an id never registered).
    public func state(realm: String, id: UUID) async throws -> User.State {
        try await ServiceRefusal.translating {
            try await users.actor(for: StreamNames.user(realm: realm, userID: id)).current().state
        }
    }

    func requireVault() throws -> PersonalDataVault {
        guard let vault else { throw MasterKeyMissing() }
        return vault
    }
}
