import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Operator verbs on users: find, invite, list, profile, the account actions, TOTP, passkeys, erasure.
extension AdminService {

    /// A user by id or by email (deleted users by id only).
    public func findUser(realm: String, _ key: String) async throws -> UUID? {
        if let id = UUID(uuidString: key) { return id }
        guard let email = EmailAddress(key) else { return nil }
        let vault = try core.requireVault()
        return try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: core.pool)
    }

    /// A user as the admin API and CLI list them, the address opened.
    public struct UserSummary: Sendable, Equatable {
        public var id: UUID
        /// nil once erased.
        public var email: String?
        public var status: String
    }

    /// Creates a confirmed user with no password, ready to sign in by email code or magic link
    /// (an invitation: the operator vouches for the address).
    public func createUser(
        realm: String, email rawEmail: String, firstName: String? = nil, lastName: String? = nil, username: String? = nil,
        emailConfirmed: Bool = true, metadata: EventMetadata
    ) async throws -> UserSummary {
        guard try await self.realm(realm).exists else { throw DomainError.notFound("Realm.NotFound", "No realm \(realm).") }
        guard let email = EmailAddress(rawEmail) else { throw DomainError("Email.Invalid", "The email address is not valid.") }
        if try await findUser(realm: realm, email.value) != nil {
            throw DomainError.conflict("User.AlreadyExists", "A user with this email address exists.")
        }
        let vault = try core.requireVault()
        let id = UUID()
        // The key (with the address's blind index) is stored first: the users projection
        // copies the index from beside it. A registration that then fails leaves a key no
        // user has, which maintenance removes (`PersonalDataVault.shredAbandoned`).
        let key = try vault.newSubject(PersonalDataVault.userSubject(id), realm: realm, emailIndex: vault.blindIndex(email.value, realm: realm))
        _ = try await core.pool.query(key.insert)
        let state = try await core.userActors.actor(forNew: StreamNames.user(realm: realm, userID: id)).execute(
            .register(
                id: id, email: .sealed(try key.seal(email.value)), emailConfirmed: emailConfirmed, username: try key.seal(User.cleanName(username)),
                firstName: try key.seal(User.cleanName(firstName)), lastName: try key.seal(User.cleanName(lastName)),
                securityStamp: UUID().uuidString, via: "admin"), now: core.now(), metadata: metadata
        ).state
        return UserSummary(id: id, email: email.value, status: state.status.rawValue)
    }

    /// The realm's users, oldest first, addresses opened (each user's key comes with the row).
    public typealias UserPage = UserListPage

    public func users(realm: String, limit: Int = 1000, page: UserPage = .first) async throws -> [UserSummary] {
        var users: [UserSummary] = []
        for row in try await UsersTable.list(realm: realm, limit: limit, page: page, pool: core.pool) {
            if let sealedKey = row.sealedKey {
                try core.vault?.adopt(sealedKey: sealedKey, subject: PersonalDataVault.userSubject(row.userID))
            }
            let stored = row.storedEmail.map(PersonalText.init(stored:))
            let email = try await core.vault?.open(stored) ?? stored.flatMap { if case .plain(let text) = $0 { text } else { nil } }
            users.append(UserSummary(id: row.userID, email: email, status: row.status))
        }
        return users
    }

    /// Whether the realm has this user (in any status but never registered).
    public func userExists(realm: String, id: UUID) async throws -> Bool {
        try await core.user(realm: realm, id: id).exists
    }

    /// How many users a realm has (every status).
    public func userCount(realm: String) async throws -> Int {
        try await UsersTable.count(realm: realm, pool: core.pool)
    }

    /// A user's personal fields, opened.
    public func profile(realm: String, userID: UUID) async throws -> (state: User.State, profile: UserProfile) {
        let state = try await core.user(realm: realm, id: userID)
        return (state, try await core.vault.profile(of: state))
    }

    /// Erases a user by id or address (`UserEraser`).
    public func eraseUser(realm: String, _ key: String, metadata: EventMetadata) async throws -> UserEraser.Outcome {
        try await UserEraser(core: core).erase(realm: realm, key, metadata: metadata)
    }

    public enum UserAction: String, CaseIterable, Sendable {
        case disable, enable, logoutEverywhere = "logout-everywhere", delete
    }

    public func apply(_ action: UserAction, realm: String, userID: UUID, metadata: EventMetadata) async throws -> User.State {
        let stamp = OpaqueToken.generate().hash
        let command: User.Command
        switch action {
        case .disable: command = .disable(newStamp: stamp)
        case .enable: command = .enable
        case .logoutEverywhere: command = .rotateSecurityStamp(newStamp: stamp, reason: .logoutEverywhere)
        case .delete: command = .delete(newStamp: stamp)
        }
        return try await core.userActors.actor(for: StreamNames.user(realm: realm, userID: userID)).execute(command, now: core.now(), metadata: metadata).state
    }

    /// Turns TOTP on for a user with a new secret; hand the provisioning to the user.
    public func enableTOTP(realm: String, userID: UUID, metadata: EventMetadata) async throws -> TOTPEnrollment.Provisioning {
        let issuer = try await self.realm(realm).settings?.displayName ?? realm
        return try await core.totpEnrollment().enableDirectly(realm: realm, userID: userID, issuer: issuer, metadata: metadata)
    }

    /// Turns TOTP off (a lost authenticator, say).
    public func disableTOTP(realm: String, userID: UUID, metadata: EventMetadata) async throws {
        try await core.totpEnrollment().disable(realm: realm, userID: userID, metadata: metadata)
    }

    // MARK: Passkeys

    /// A user's live passkeys.
    public func passkeys(realm: String, userID: UUID) async throws -> [PasskeyService.Summary] {
        try await core.passkeys.list(realm: realm, userID: userID)
    }

    /// Revokes one of a user's passkeys; false when the user has no such passkey.
    public func revokePasskey(realm: String, userID: UUID, passkeyID: UUID, metadata: EventMetadata) async throws -> Bool {
        try await core.passkeys.delete(realm: realm, userID: userID, passkeyID: passkeyID, by: metadata.actor ?? "admin", metadata: metadata)
    }
}
