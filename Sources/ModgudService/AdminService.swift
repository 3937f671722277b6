import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Administration shared by the CLI and the admin API: realms, clients, users, audit.
public struct AdminService: Sendable {
    public let core: ModgudCore

    public init(core: ModgudCore) {
        self.core = core
    }

    // MARK: Realms

    public func createRealm(_ id: String, settings: RealmSettings, metadata: EventMetadata) async throws -> Realm.State {
        let state = try await core.realms.actor(for: StreamNames.realm(id)).execute(.create(id: id, settings: settings), now: core.now(), metadata: metadata)
            .state
        await core.settingsChanged(.realm(id))
        return state
    }

    /// Changes a realm's settings; a `change` that throws writes nothing. Returns a warning when
    /// the primary domain changed: passkeys enrolled under the old one stop working through
    /// every client without an RP-ID of its own (docs/spec.md section 4).
    public func updateRealm(_ id: String, metadata: EventMetadata, change: (inout RealmSettings) throws -> Void) async throws
        -> (state: Realm.State, warning: String?)
    {
        let actor = await core.realms.actor(for: StreamNames.realm(id))
        guard var settings = try await actor.current().state.settings else { throw DomainError("Realm.NotFound", "No realm \(id).") }
        let before = settings.primaryDomain
        try change(&settings)
        let state = try await actor.execute(.changeSettings(settings), now: core.now(), metadata: metadata).state
        await core.settingsChanged(.realm(id))
        guard let before, before != settings.primaryDomain else { return (state, nil) }
        let enrolled = try await core.passkeys.count(realm: id, rpID: before)
        let affected = try await core.pool.query(
            "SELECT client_id FROM clients WHERE realm_id = \(id) AND coalesce(settings->>'rpID', '') = '' ORDER BY client_id"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let clients = affected.isEmpty ? "no client uses it" : "clients without an RP-ID of their own: " + affected.joined(separator: ", ")
        let warning =
            "The primary domain changed from \(before) to \(settings.primaryDomain ?? "(none)"): \(enrolled) passkey(s) enrolled under \(before) "
            + "will no longer sign in through the realm's default RP-ID (\(clients))."
        return (state, warning)
    }

    /// Every realm: id, hosts, whether native grants are on.
    public func realms() async throws -> [(id: String, hosts: [String], nativeGrants: Bool)] {
        try await core.pool.query(
            """
            SELECT r.realm_id, coalesce((SELECT string_agg(h.host, ' ' ORDER BY h.host) FROM realm_hosts h WHERE h.realm_id = r.realm_id), ''),
                   coalesce((r.settings->'nativeGrants'->>'enabled')::boolean, false)
            FROM realms r ORDER BY r.realm_id
            """
        ).rows.map {
            (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1).split(separator: " ").map(String.init), try $0.decode(Bool.self, at: 2))
        }
    }

    public func realm(_ id: String) async throws -> Realm.State {
        try await core.realms.actor(for: StreamNames.realm(id)).current().state
    }

    // MARK: Clients

    /// Registers a client; a confidential one gets a secret, returned once and stored hashed.
    public func createClient(realm: String, id: String, settings: ClientSettings, metadata: EventMetadata) async throws -> (Client.State, secret: String?)
    {
        guard try await self.realm(realm).exists else { throw DomainError("Realm.NotFound", "No realm \(realm).") }
        let secret = settings.type == .confidential ? ClientAuthenticator.generateSecret() : nil
        let state = try await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(.register(id: id, settings: settings, secretHash: secret?.hash), now: core.now(), metadata: metadata).state
        await core.settingsChanged(.client(realm: realm, id: id))
        return (state, secret?.secret)
    }

    /// Updates a client. Returns a warning when the RP-ID changed: passkeys enrolled under the
    /// old RP-ID stop working.
    public func updateClient(realm: String, id: String, metadata: EventMetadata, change: (inout ClientSettings) throws -> Void) async throws
        -> (Client.State, warning: String?)
    {
        let actor = await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id))
        guard var settings = try await actor.current().state.settings else { throw DomainError("Client.NotFound", "No client \(id).") }
        let realmSettings = try await self.realm(realm).settings ?? RealmSettings(hosts: [], displayName: realm)
        let before = PasskeyService.rpID(client: settings, realm: realmSettings)
        try change(&settings)
        let state = try await actor.execute(.update(settings), now: core.now(), metadata: metadata).state
        await core.settingsChanged(.client(realm: realm, id: id))
        let after = PasskeyService.rpID(client: settings, realm: realmSettings)
        guard before != after else { return (state, nil) }
        var enrolled = 0
        if let before { enrolled = try await core.passkeys.count(realm: realm, rpID: before) }
        let warning =
            "The passkey RP-ID changed from \(before ?? "(none)") to \(after ?? "(none)"): \(enrolled) passkey(s) enrolled under "
            + "\(before ?? "the old RP-ID") will no longer sign in with this client."
        return (state, warning)
    }

    /// Gives a confidential client a new secret (returned once); the old one stops working at once.
    public func rotateClientSecret(realm: String, id: String, metadata: EventMetadata) async throws -> String {
        let (secret, hash) = ClientAuthenticator.generateSecret()
        _ = try await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(.rotateSecret(secretHash: hash), now: core.now(), metadata: metadata)
        await core.settingsChanged(.client(realm: realm, id: id))
        return secret
    }

    public func setClientEnabled(realm: String, id: String, enabled: Bool, metadata: EventMetadata) async throws -> Client.State {
        let state = try await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(enabled ? .enable : .disable, now: core.now(), metadata: metadata).state
        await core.settingsChanged(.client(realm: realm, id: id))
        return state
    }

    /// Deletes a client: it can no longer authenticate, its access tokens stop being live at
    /// once (introspection, userinfo), its refresh tokens are refused, and its id is retired.
    public func deleteClient(realm: String, id: String, metadata: EventMetadata) async throws {
        _ = try await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id)).execute(.delete, now: core.now(), metadata: metadata)
        await core.settingsChanged(.client(realm: realm, id: id))
    }

    public func client(realm: String, id: String) async throws -> Client.State {
        try await core.clients.actor(for: StreamNames.client(realm: realm, clientID: id)).current().state
    }

    public func clients(realm: String) async throws -> [(id: String, type: String, enabled: Bool)] {
        try await core.pool.query(
            "SELECT client_id, settings->>'type', enabled FROM clients WHERE realm_id = \(realm) ORDER BY client_id"
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(Bool.self, at: 2)) }
    }

    // MARK: Users

    /// A user by id or by email (deleted users by id only).
    public func findUser(realm: String, _ key: String) async throws -> UUID? {
        if let id = UUID(uuidString: key) { return id }
        guard let email = EmailAddress(key) else { return nil }
        let vault = try core.requireVault()
        return try await UserLookup.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: core.pool)
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
        guard try await self.realm(realm).exists else { throw DomainError("Realm.NotFound", "No realm \(realm).") }
        guard let email = EmailAddress(rawEmail) else { throw DomainError("Email.Invalid", "The email address is not valid.") }
        if try await findUser(realm: realm, email.value) != nil {
            throw DomainError("User.AlreadyExists", "A user with this email address exists.")
        }
        let vault = try core.requireVault()
        let id = UUID()
        // The key (with the address's blind index) is stored first: the users projection
        // copies the index from beside it. A registration that then fails leaves a key no
        // user has, which maintenance removes (`PersonalDataVault.shredAbandoned`).
        let key = try vault.newSubject(PersonalDataVault.userSubject(id), realm: realm, emailIndex: vault.blindIndex(email.value, realm: realm))
        _ = try await core.pool.query(key.insert)
        let state = try await core.users.actor(forNew: StreamNames.user(realm: realm, userID: id)).execute(
            .register(
                id: id, email: .sealed(try key.seal(email.value)), emailConfirmed: emailConfirmed, username: try key.seal(User.cleanName(username)),
                firstName: try key.seal(User.cleanName(firstName)), lastName: try key.seal(User.cleanName(lastName)),
                securityStamp: UUID().uuidString, via: "admin"), now: core.now(), metadata: metadata
        ).state
        return UserSummary(id: id, email: email.value, status: state.status.rawValue)
    }

    /// The realm's users, oldest first, addresses opened (each user's key comes with the row).
    public func users(realm: String, limit: Int = 1000) async throws -> [UserSummary] {
        let rows = try await core.pool.query(
            """
            SELECT u.user_id, u.email, u.status, k.sealed FROM users u
            LEFT JOIN subject_keys k ON k.subject = 'user:' || u.user_id::text
            WHERE u.realm_id = \(realm) ORDER BY u.registered_at, u.user_id LIMIT \(limit)
            """
        ).rows
        var users: [UserSummary] = []
        for row in rows {
            let id = try row.decode(UUID.self, at: 0)
            if let sealedKey = try row.decode(PQBytes?.self, at: 3) {
                try core.vault?.adopt(sealedKey: sealedKey.bytes, subject: PersonalDataVault.userSubject(id))
            }
            let stored = try row.decode(String?.self, at: 1).map(PersonalText.init(stored:))
            let email = try await core.vault?.open(stored) ?? stored.flatMap { if case .plain(let text) = $0 { text } else { nil } }
            users.append(UserSummary(id: id, email: email, status: try row.decode(String.self, at: 2)))
        }
        return users
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
        return try await core.users.actor(for: StreamNames.user(realm: realm, userID: userID)).execute(command, now: core.now(), metadata: metadata).state
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

    // MARK: Audit

    /// One line of a user's history.
    public struct AuditEntry: Sendable {
        public var recordedAt: Date
        public var event: String
        public var detail: String
        public var actor: String?
        public var client: String?
        public var clientIP: String?
    }

    /// A user's history from the log: their own stream and their token families, in log order.
    public func audit(realm: String, userID: UUID) async throws -> [AuditEntry] {
        let userStream = StreamNames.user(realm: realm, userID: userID).id
        let rows = try await core.pool.query(
            """
            SELECT e.recorded_at, e.type, e.payload->>'reason', e.metadata->>'actor', f.client_id, e.metadata->>'clientIP',
                   e.payload->>'grantType', e.payload->>'generation', e.payload->>'storedSignCount', e.payload->>'receivedSignCount',
                   CASE WHEN e.type = 'user.registered' THEN e.payload->>'email' END
            FROM events e
            LEFT JOIN token_families f ON e.stream_id = 'token-family-' || f.family_id::text
            WHERE e.realm = \(realm) AND (e.stream_id = \(userStream) OR f.user_id = \(userID) OR e.stream_id IN (
                -- The user's passkeys, deleted ones included (an operator command: a scan of
                -- the realm's passkey enrollments is acceptable here).
                SELECT stream_id FROM events
                WHERE realm = \(realm) AND type = 'passkey.enrolled' AND lower(payload->>'userID') = \(userID.uuidString.lowercased())))
            ORDER BY e.tx_id, e.position
            """
        ).rows
        // An erased person's data reads `[erased]`: their address in the registration, and
        // their client IPs (whose day keys outlive them: the audit does not).
        let erased = try await core.user(realm: realm, id: userID).status == .erased
        var entries: [AuditEntry] = []
        for row in rows {
            var details: [String] = []
            if let grant = try row.decode(String?.self, at: 6) { details.append("grant=\(grant)") }
            if let generation = try row.decode(String?.self, at: 7) { details.append("generation=\(generation)") }
            if let reason = try row.decode(String?.self, at: 2) { details.append("reason=\(reason)") }
            if let stored = try row.decode(String?.self, at: 8), let received = try row.decode(String?.self, at: 9) {
                details.append("sign_count stored=\(stored) received=\(received)")
            }
            if let email = try row.decode(String?.self, at: 10).map(PersonalText.init(stored:)) {
                let opened = erased ? nil : try await core.vault?.open(email)
                details.append("email=\(opened ?? (erased || core.vault != nil ? SealedFieldRenderer.erased : "[sealed]"))")
            }
            // Sealed addresses open while their day key lives (docs/operations/retention.md, "Client IPs").
            let stored = try row.decode(String?.self, at: 5)
            let address =
                erased
                ? stored.map { _ in SealedFieldRenderer.erased }
                : try await core.vault?.openAddress(stored) ?? stored.map { SealedText(stored: $0) == nil ? $0 : "[sealed]" }
            entries.append(
                AuditEntry(
                    recordedAt: try row.decode(Date.self, at: 0), event: try row.decode(String.self, at: 1),
                    detail: details.joined(separator: " "), actor: try row.decode(String?.self, at: 3),
                    client: try row.decode(String?.self, at: 4), clientIP: address))
        }
        return entries
    }
}
