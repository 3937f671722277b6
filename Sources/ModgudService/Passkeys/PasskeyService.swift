import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Passkey sign-in and management (docs/spec.md section 4): ceremonies, the urn:cocoar:passkey
/// grant, enrollment, list and delete. WebAuthn verification is the `WebAuthn` library's;
/// this service decides which challenge, RP-ID, origins and stored credential it checks
/// against, and records the outcome.
public struct PasskeyService: Sendable {
    let pool: PQPool
    let ceremonies: AggregateRegistry<PasskeyCeremony>
    let passkeys: AggregateRegistry<Passkey>
    let users: AggregateRegistry<User>
    let clients: ClientAuthenticator
    let tokenService: TokenService
    let now: @Sendable () -> Date

    init(
        pool: PQPool, ceremonies: AggregateRegistry<PasskeyCeremony>, passkeys: AggregateRegistry<Passkey>, users: AggregateRegistry<User>,
        clients: ClientAuthenticator, tokenService: TokenService, now: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.ceremonies = ceremonies
        self.passkeys = passkeys
        self.users = users
        self.clients = clients
        self.tokenService = tokenService
        self.now = now
    }

    /// No RP-ID to put passkeys under.
    static let unconfigured = ServiceRefusal(
        .unavailable, "Passkey.Unavailable", "Passkeys are not configured: set the client's RP-ID or the realm's primary domain.")

    /// A begun ceremony: its id and the options for the platform authenticator.
    public struct Begun: Sendable {
        public var ceremonyID: UUID
        public var options: CeremonyOptions
    }

    /// The RP-ID a client's passkeys live under: its own, else the realm's primary domain.
    public static func rpID(client: ClientSettings?, realm: RealmSettings) -> String? {
        if let own = client?.rpID, !own.isEmpty { return own }
        if let primary = realm.primaryDomain, !primary.isEmpty { return primary }
        return nil
    }

    /// Origins accepted for a ceremony under `rpID`: https on the RP-ID and its subdomains,
    /// plus the client's Android origins when the client's passkeys live under that RP-ID.
    static func origins(rpID: String, client: ClientSettings?, realm: RealmSettings) -> OriginPolicy {
        let android = client.flatMap { Self.rpID(client: $0, realm: realm) == rpID ? $0.acceptedAndroidOrigins : nil } ?? []
        return .rpID(rpID, plus: android)
    }

    static let verification = VerificationPolicy(requireUserPresence: true, requireUserVerification: true)

    // MARK: Sign-in

    /// POST /connect/passkey/begin: a usernameless login ceremony (empty allowCredentials).
    /// - Throws: `ServiceRefusal` (invalid) for an unknown client, 503 without an RP-ID.
    public func beginLogin(realm: RealmDirectory.Entry, clientID: String?, metadata: EventMetadata) async throws -> Begun {
        var client: ClientSettings?
        if let clientID {
            guard let found = try await clients.enabledClient(realm: realm.realmID, clientID: clientID) else {
                throw ServiceRefusal.invalid("Passkey.UnknownClient", "Unknown client_id.")
            }
            client = found
        }
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .login, rpID: rpID, clientID: clientID, userID: nil, metadata: metadata)
        return Begun(ceremonyID: ceremonyID, options: .request(challenge: challenge, rpID: rpID, timeout: PasskeyCeremony.lifetime))
    }

    /// grant_type=urn:cocoar:passkey. Every failure is `invalid_grant` with one of docs/spec.md's
    /// two messages; the HTTP layer adds the jitter.
    public func redeem(client: AuthenticatedClient, ceremonyID rawCeremonyID: String, assertion: String, _ grant: EmailSignInService.GrantRequest)
        async throws -> TokenResponse
    {
        let badCeremony = OAuthError.invalidGrant("Invalid or expired passkey ceremony.")
        let failed = OAuthError.invalidGrant("Passkey verification failed.")
        let realm = client.realm
        _ = try ScopePolicy.grantedScopes(requested: grant.scope, client: client.settings)
        _ = try ScopePolicy.audiences(resources: grant.resources, allowed: client.settings.audiences, clientID: client.id)
        guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw badCeremony }
        // The ceremony is consumed before the assertion is looked at (single use, by the store).
        guard
            let ceremony = try await consumeCeremony(
                realm: realm, ceremonyID: ceremonyID, .consume(kind: .login, clientID: client.id, userID: nil), metadata: grant.metadata)
        else { throw badCeremony }
        guard let credential = try? AssertionCredential(json: Array(assertion.utf8)), let rawID = Base64URL.decode(credential.rawId),
            let challenge = Base64URL.decode(ceremony.challenge)
        else { throw failed }
        // The credential by the hash of its id: one indexed row, never a scan; with the current
        // versions of the passkey's and its user's streams, so warm actors read nothing more.
        guard
            let row = try await pool.query(
                """
                SELECT p.passkey_id, p.user_id,
                       coalesce((SELECT version FROM streams WHERE id = \(Passkey.streamType + "-") || p.passkey_id::text), 0),
                       coalesce((SELECT version FROM streams WHERE id = \(User.streamType + "-") || p.user_id::text), 0)
                FROM passkeys p
                WHERE p.realm_id = \(realm) AND p.credential_hash = \(PasskeyDirectoryProjection.credentialHash(rawID))
                """
            ).first
        else { throw failed }
        let passkeyID = try row.decode(UUID.self, at: 0)
        let userVersion = try row.decode(Int64.self, at: 3)
        let passkey = await passkeys.actor(for: StreamNames.passkey(realm: realm, passkeyID: passkeyID))
        let state = try await passkey.current(atLeast: try row.decode(Int64.self, at: 2)).state
        // A credential verifies only under the RP-ID it was enrolled under.
        guard state.isActive, let enrolled = state.enrolled, enrolled.rpID == ceremony.rpID,
            let publicKeyBytes = Base64URL.decode(enrolled.publicKey), let publicKey = try? COSEKey(bytes: publicKeyBytes)
        else { throw failed }
        let realmSettings = try await tokenService.realmSettings(realm)
        let verdict: AssertionVerdict
        do {
            verdict = try AssertionVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client.settings, realm: realmSettings), policy: Self.verification,
                stored: StoredCredential(
                    credentialID: rawID, publicKey: publicKey, signCount: state.signCount, userHandle: Self.userHandle(enrolled.userID),
                    backupEligible: enrolled.backupEligible))
        } catch .signCountNotIncreasing(let stored, let received) {
            _ = try? await passkey.execute(.reportClone(stored: stored, received: received), now: now(), metadata: grant.metadata)
            throw failed
        } catch {
            throw failed
        }
        let user = try await users.actor(for: StreamNames.user(realm: realm, userID: enrolled.userID)).current(atLeast: userVersion).state
        // User verification was required: the passkey is two factors in one (RFC 8176 "mfa").
        // The tokens are minted first; their family commits with the recorded use.
        let signIn =
            user.canSignIn
            ? try await tokenService.prepareSignIn(
                client: client, user: user, grantType: .passkey, scope: grant.scope, resources: grant.resources, amr: ["passkey", "mfa"],
                issuer: grant.issuer)
            : nil
        let used = try await passkey.execute(
            .recordUse(signCount: verdict.newSignCount, backedUp: verdict.backedUp, at: now()), now: now(), metadata: grant.metadata,
            alsoAppending: { events in
                guard let signIn, case .used = events.first else { return [] }
                return [try signIn.write()]
            })
        guard case .used = used.events.first else { throw failed }  // a concurrent use got there with a higher count
        guard let signIn else { throw OAuthError.invalidGrant("The account cannot sign in.") }
        return signIn.response
    }

    // MARK: Enrollment

    /// POST /connect/passkey/enroll/begin: creation options for the bearer's user under the
    /// RP-ID of the client the bearer token was issued to.
    public func beginEnrollment(realm: RealmDirectory.Entry, userID: UUID, clientID: String, metadata: EventMetadata) async throws -> Begun {
        let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID)
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        let user = try await users.actor(for: StreamNames.user(realm: realm.realmID, userID: userID)).current().state
        guard user.canSignIn else { throw ServiceRefusal.invalid("Passkey.InvalidRequest", "Invalid request.") }
        // excludeCredentials: the user's live passkeys under this RP-ID, in one indexed read.
        let exclude = try await pool.query(
            """
            SELECT credential_id FROM passkeys WHERE realm_id = \(realm.realmID) AND user_id = \(userID) AND rp_id = \(rpID)
            ORDER BY created_at, passkey_id
            """
        ).rows.map { try $0.decode(String.self, at: 0) }
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .enrollment, rpID: rpID, clientID: clientID, userID: userID, metadata: metadata)
        // Shown by the authenticator only; opened for this answer, never stored.
        let profile = try await tokenService.vault.profile(of: user)
        let name = profile.email ?? userID.uuidString.lowercased()
        let displayName = profile.displayName
        return Begun(
            ceremonyID: ceremonyID,
            options: .creation(
                challenge: challenge, rpID: rpID, rpName: realm.settings.displayName, userHandle: Base64URL.encode(Self.userHandle(userID)),
                userName: name, userDisplayName: displayName.isEmpty ? name : displayName, exclude: exclude,
                timeout: PasskeyCeremony.lifetime))
    }

    /// One enrolled passkey as its owner sees it.
    public struct Summary: Sendable, Equatable {
        public var id: UUID
        public var displayName: String
        public var rpID: String
        public var createdAt: Date
        public var lastUsedAt: Date?
        /// Who holds it, from its AAGUID (`PasskeyProviders`).
        public var provider: PasskeyProviders.Provider
    }

    /// POST /connect/passkey/enroll: verifies the attestation against the ceremony and
    /// records the passkey. - Throws: `ServiceRefusal` (invalid) with docs/spec.md's messages.
    public func completeEnrollment(
        realm: RealmDirectory.Entry, userID: UUID, clientID: String, ceremonyID rawCeremonyID: String, attestation: [UInt8], displayName: String?,
        metadata: EventMetadata
    ) async throws -> Summary {
        guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw ServiceRefusal.invalid("Passkey.InvalidRequest", "Invalid request.") }
        guard
            let ceremony = try await consumeCeremony(
                realm: realm.realmID, ceremonyID: ceremonyID, .consume(kind: .enrollment, clientID: clientID, userID: userID), metadata: metadata)
        else { throw ServiceRefusal.invalid("Passkey.SessionExpired", "The enrollment session expired.") }
        let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID)
        let verdict: RegistrationVerdict
        do {
            let credential = try RegistrationCredential(json: attestation)
            guard let challenge = Base64URL.decode(ceremony.challenge) else { throw WebAuthnError.malformedCredential("challenge") }
            verdict = try RegistrationVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client, realm: realm.settings), policy: Self.verification)
        } catch {
            throw ServiceRefusal.invalid("Passkey.InvalidAttestation", "Invalid attestation.")
        }
        let time = now()
        let passkeyID = UUID()
        let name = Self.cleanName(displayName) ?? "Passkey"
        let sealed = try await sealName(name, userID: userID, realm: realm.realmID)
        let enrolled = Self.enrolled(verdict, passkeyID: passkeyID, userID: userID, rpID: ceremony.rpID, name: sealed, clientID: clientID, at: time)
        do {
            _ = try await passkeys.actor(forNew: StreamNames.passkey(realm: realm.realmID, passkeyID: passkeyID))
                .execute(.enroll(enrolled), now: time, metadata: metadata)
        } catch EventStoreError.inlineProjectionFailed {
            throw ServiceRefusal.invalid("Passkey.AlreadyRegistered", "This passkey is already registered.")
        } catch is DomainError {
            throw ServiceRefusal.invalid("Passkey.EnrollmentFailed", "Enrollment failed.")
        }
        return Summary(
            id: passkeyID, displayName: name, rpID: ceremony.rpID, createdAt: time, lastUsedAt: nil,
            provider: PasskeyProviders.provider(aaguid: Base64URL.encode(verdict.aaguid)))
    }

    // MARK: Management

    /// GET /connect/passkey: the user's live passkeys, oldest first.
    public func list(realm: String, userID: UUID) async throws -> [Summary] {
        var summaries: [Summary] = []
        for row in try await pool.query(
            """
            SELECT passkey_id, display_name, rp_id, created_at, last_used_at, aaguid FROM passkeys
            WHERE realm_id = \(realm) AND user_id = \(userID) ORDER BY created_at, passkey_id
            """
        ).rows {
            summaries.append(try await summary(row))
        }
        return summaries
    }

    /// GET /connect/passkey/{id}: one of the user's passkeys (nil for another user's: the
    /// caller answers 404, no cross-user existence oracle).
    public func get(realm: String, userID: UUID, passkeyID: UUID) async throws -> Summary? {
        let row = try await pool.query(
            """
            SELECT passkey_id, display_name, rp_id, created_at, last_used_at, aaguid FROM passkeys
            WHERE realm_id = \(realm) AND user_id = \(userID) AND passkey_id = \(passkeyID)
            """
        ).first
        guard let row else { return nil }
        return try await summary(row)
    }

    /// PATCH /connect/passkey/{id}: renames one of the user's passkeys; nil when the user has
    /// no such passkey. - Throws: `ServiceRefusal` (invalid) `Passkey.InvalidName`.
    public func rename(realm: String, userID: UUID, passkeyID: UUID, to name: String, by actor: String, metadata: EventMetadata) async throws
        -> Summary?
    {
        let passkey = await passkeys.actor(for: StreamNames.passkey(realm: realm, passkeyID: passkeyID))
        let state = try await passkey.current().state
        guard state.isActive, state.enrolled?.userID == userID else { return nil }
        // The domain checks the plaintext and records it sealed; the current name is opened
        // here (the same name again writes nothing).
        let current = try await openName(state.displayName)
        let sealed = try await sealName(Passkey.validName(name) ?? name, userID: userID, realm: realm)
        do {
            _ = try await passkey.execute(.rename(name, sealed: sealed, current: current, by: actor), now: now(), metadata: metadata)
        } catch let refused as DomainError where refused.code == "Passkey.InvalidName" {
            throw ServiceRefusal.invalid(refused.code, refused.message)
        } catch is DomainError {
            return nil  // deleted meanwhile
        }
        return try await get(realm: realm, userID: userID, passkeyID: passkeyID)
    }

    private func summary(_ row: PQRow) async throws -> Summary {
        let name = try await openName(PersonalText(stored: try row.decode(String.self, at: 1))) ?? "[erased]"
        return Summary(
            id: try row.decode(UUID.self, at: 0), displayName: name, rpID: try row.decode(String.self, at: 2),
            createdAt: try row.decode(Date.self, at: 3), lastUsedAt: try row.decode(Date?.self, at: 4),
            provider: PasskeyProviders.provider(aaguid: try row.decode(String?.self, at: 5)))
    }

    /// A passkey's name sealed under its owner's data key (issue 22: users type names into it).
    func sealName(_ name: String, userID: UUID, realm: String) async throws -> PersonalText {
        guard let vault = tokenService.vault else { throw MasterKeyMissing() }
        return .sealed(try await vault.seal(name, subject: PersonalDataVault.userSubject(userID), realm: realm))
    }

    /// A stored name opened (legacy plaintext as it is); nil when the owner was erased.
    func openName(_ name: PersonalText?) async throws -> String? {
        guard case .sealed = name else { return name.map(\.stored) }
        guard let vault = tokenService.vault else { throw MasterKeyMissing() }
        return try await vault.open(name)
    }

    /// DELETE /connect/passkey/{id}: false when there is no such passkey *of this user*
    /// (the caller answers 404 either way: no cross-user existence oracle).
    public func delete(realm: String, userID: UUID?, passkeyID: UUID, by actor: String, metadata: EventMetadata) async throws -> Bool {
        let passkey = await passkeys.actor(for: StreamNames.passkey(realm: realm, passkeyID: passkeyID))
        let state = try await passkey.current().state
        guard state.isActive, let enrolled = state.enrolled, userID == nil || enrolled.userID == userID else { return false }
        do {
            _ = try await passkey.execute(.delete(by: actor), now: now(), metadata: metadata)
        } catch is DomainError {
            return false  // deleted meanwhile
        }
        return true
    }

    /// How many live passkeys are enrolled under `rpID` for a client change warning.
    public func count(realm: String, rpID: String) async throws -> Int {
        try await pool.query("SELECT count(*) FROM passkeys WHERE realm_id = \(realm) AND rp_id = \(rpID)").first?.decode(Int.self, at: 0) ?? 0
    }

    // MARK: Helpers

    private func begin(realm: String, kind: PasskeyCeremony.Kind, rpID: String, clientID: String?, userID: UUID?, metadata: EventMetadata)
        async throws -> (UUID, [UInt8])
    {
        let ceremonyID = UUID()
        let challenge = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let time = now()
        _ = try await ceremonies.actor(forNew: StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID)).execute(
            .begin(
                PasskeyCeremonyBegun(
                    ceremonyID: ceremonyID, kind: kind, challenge: Base64URL.encode(challenge), rpID: rpID, clientID: clientID, userID: userID,
                    expiresAt: time + PasskeyCeremony.lifetime)), now: time, metadata: metadata)
        return (ceremonyID, challenge)
    }

    /// Redeems a ceremony: its begin event, or nil when it is unknown, expired, used, of
    /// another kind, client or user (single use, decided by the stream's version).
    func consumeCeremony(realm: String, ceremonyID: UUID, _ consume: PasskeyCeremony.Command, metadata: EventMetadata) async throws
        -> PasskeyCeremonyBegun?
    {
        do {
            return try await ceremonies.actor(for: StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID))
                .execute(consume, now: now(), metadata: metadata).state.begun
        } catch is DomainError {
            return nil
        }
    }

    /// The `passkey.enrolled` event of a verified registration.
    static func enrolled(
        _ verdict: RegistrationVerdict, passkeyID: UUID, userID: UUID, rpID: String, name: PersonalText, clientID: String, at time: Date
    ) -> PasskeyEnrolled {
        PasskeyEnrolled(
            passkeyID: passkeyID, userID: userID, credentialID: Base64URL.encode(verdict.credentialID), rpID: rpID,
            publicKey: Base64URL.encode(verdict.publicKey.encoded), algorithm: Int(verdict.publicKey.algorithm.rawValue), signCount: verdict.signCount,
            aaguid: Base64URL.encode(verdict.aaguid), backupEligible: verdict.backupEligible, backedUp: verdict.backedUp,
            transports: verdict.transports.sorted(), attestationFormat: verdict.attestationFormat, displayName: name, clientID: clientID,
            createdAt: time)
    }

    /// The WebAuthn user handle: the user id's 16 bytes (random, no personal data).
    static func userHandle(_ userID: UUID) -> [UInt8] {
        withUnsafeBytes(of: userID.uuid) { Array($0) }
    }

    static func cleanName(_ name: String?) -> String? {
        guard let trimmed = name?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return String(trimmed.filter { !$0.isNewline }.prefix(100))
    }
}
