import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Minting and refresh (docs/spec.md sections 0 and 5): the tokens a sign-in gets, which
/// scopes and audiences they carry, and their rotation. Its collaborators are its own (issue
/// 68): introspection (`TokenIntrospection`), revocation (`TokenRevocation`), client credentials
/// (`ClientCredentialsService`) and Native SSO (`NativeSSOService`) are types of their own, and
/// the step before minting is the sign-in pipeline's (`SignInPipeline`).
public struct TokenService: Sendable {
    let pool: PQPool
    let families: AggregateRegistry<TokenFamily>
    let users: AggregateRegistry<User>
    let tokens: TokenTables
    let minter: TokenMinter
    let realms: RealmDirectory
    /// Opens the personal claims (issue 13); nil in tools without the master key.
    let vault: PersonalDataVault?
    let now: @Sendable () -> Date

    /// The one answer to an unknown, spent, expired or foreign refresh token.
    public static let invalidRefreshToken = OAuthError.invalidGrant("The refresh token is invalid or expired.")

    public init(
        pool: PQPool, families: AggregateRegistry<TokenFamily>, users: AggregateRegistry<User>, minter: TokenMinter, realms: RealmDirectory,
        vault: PersonalDataVault?, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.pool = pool
        self.vault = vault
        self.realms = realms
        self.families = families
        self.users = users
        self.tokens = TokenTables(pool: pool)
        self.minter = minter
        self.now = now
    }

    /// Signs a user in: a new token family (called by the passwordless grants once the proof holds).
    public func signIn(
        client: AuthenticatedClient, user: User.State, grantType: GrantType, scope: String?, resources: [String], amr: [String],
        issuer: String, nonce: String? = nil, dpopKey: String? = nil, metadata: EventMetadata
    ) async throws -> TokenResponse {
        let prepared = try await prepareSignIn(
            client: client, user: user, grantType: grantType, scope: scope, resources: resources, amr: amr, issuer: issuer, nonce: nonce,
            dpopKey: dpopKey)
        _ = try await families.actor(forNew: prepared.stream).execute(.start(prepared.started), now: prepared.started.authTime, metadata: metadata)
        return prepared.response
    }

    /// A sign-in minted but not written: the caller commits `write()` in the same transaction
    /// as its proof (a consumed code, a recorded passkey use), so a grant is one commit, and
    /// answers `response` only once that committed (issue 12).
    /// - Parameter dpopKey: the thumbprint of the request's verified DPoP proof key: the access
    ///   token is bound to it, and a public client's refresh tokens too (RFC 9449 section 5).
    /// - Parameter joining: the device session a Native SSO exchange signs into (issue 69);
    ///   nil for a sign-in by a proof, which starts one when it is granted `device_sso`.
    /// - Parameter authTime: when the person signed in, for a sign-in without a new proof (the
    ///   exchange keeps the device session's); nil is now.
    public func prepareSignIn(
        client: AuthenticatedClient, user: User.State, grantType: GrantType, scope: String?, resources: [String], amr: [String],
        issuer: String, nonce: String? = nil, dpopKey: String? = nil, acrValues: [String] = [], joining: DeviceSessionLink? = nil,
        authTime: Date? = nil
    ) async throws -> PreparedSignIn {
        guard let userID = user.id, user.canSignIn else { throw OAuthError.invalidGrant("The account cannot sign in.") }
        // RFC 9470 section 4: a sign-in weaker than asked is refused here, before the caller
        // spends its proof (a code, a link, a passkey ceremony stays as it was).
        guard AuthenticationContext.satisfies(AuthenticationContext.acr(amr: amr), acrValues: acrValues) else { throw Self.unmetACR }
        let settings = try await realmSettings(client.realm)
        let team = settings.nativeSSOTeam(of: client.id)
        var scopes = try ScopePolicy.grantedScopes(requested: scope, client: client.settings)
        let audiences = try ScopePolicy.audiences(resources: resources, client: client.settings, clientID: client.id)
        let lifetimes = TokenLifetimes(settings)
        let wantsRefresh = scopes.contains("offline_access") && client.settings.grants.contains(.refreshToken)
        let time = now()
        let familyID = UUID()
        // Native SSO section 3.3: a device secret with the ID token, for a client in a team
        // that asked for `device_sso`, bound to the request's DPoP key when it has one.
        let device = NativeSSO.session(scopes: &scopes, team: team, joining: joining, familyID: familyID, dpopKey: dpopKey)
        let profile = TokenMinter.profileNeeded(scopes: scopes) ? try await vault.profile(of: user) : nil
        let minted = try await minter.mint(
            TokenMinter.Request(
                realm: client.realm, issuer: issuer, clientID: client.id, format: client.settings.accessTokenFormat, user: user,
                profile: profile, scopes: scopes, audiences: audiences, authTime: authTime ?? time, amr: amr, accessLifetime: lifetimes.access,
                refreshLifetime: wantsRefresh ? min(lifetimes.refresh, lifetimes.session) : nil, nonce: nonce, dpopKey: dpopKey,
                attestation: client.attestation, deviceSession: device.link), now: time)
        var started = TokenFamilyStarted(
            familyID: familyID, clientID: client.id, userID: userID, scopes: scopes, audiences: audiences, grantType: grantType.rawValue,
            authTime: authTime ?? time, amr: amr, securityStamp: user.securityStamp, accessToken: minted.accessRecord,
            refreshTokenHash: minted.refreshHash, refreshExpiresAt: minted.refreshExpiresAt,
            // Confidential clients' refresh tokens stay unbound: they authenticate (RFC 9449 section 5).
            dpopKey: minted.refreshHash != nil && client.settings.type == .public ? dpopKey : nil)
        started.requestedResources = Array(Set(resources)).sorted()
        started.deviceSession = device.link
        var response = TokenResponse(
            accessToken: minted.accessToken, tokenType: minted.tokenType, expiresIn: minted.expiresIn, refreshToken: minted.refreshToken,
            scope: scopes.joined(separator: " "), idToken: minted.idToken, signIn: .init(userID: userID, familyID: familyID))
        response.deviceSecret = device.secret
        return PreparedSignIn(stream: StreamNames.tokenFamily(realm: client.realm, familyID: familyID), started: started, response: response)
    }

    /// A sign-in weaker than the request's `acr_values` (issue 46).
    public static let unmetACR = OAuthError.invalidGrant(
        "The sign-in does not meet acr_values: sign in with a stronger method (docs/api.md, \"Tokens\").")

    /// grant_type=refresh_token: rotates the refresh token; a spent one revokes the family.
    ///
    /// Two round trips when this instance holds the family and the user (issue 12): the
    /// request's checks (its rate-limit count and DPoP jti claim) and one lookup (the token's
    /// family and the current versions of the family's and the user's streams) in one
    /// pipeline, then the append. `RefreshRequest` says what each part of the request does.
    public func refresh(_ request: RefreshRequest) async throws -> TokenResponse {
        let client = request.client
        guard client.settings.grants.contains(.refreshToken) else {
            try await request.checks.countRefusal(on: pool)
            throw OAuthError.unauthorizedClient("The client may not use grant_type refresh_token.")
        }
        let presented = OpaqueToken.hash(request.refreshToken)
        guard let found = try await lookUpRefreshToken(presented, realm: client.realm, checks: request.checks) else {
            throw Self.invalidRefreshToken
        }
        let family = await families.actor(for: StreamNames.tokenFamily(realm: client.realm, familyID: found.familyID))
        let (started, userID) = try admitted(try await family.current(atLeast: found.familyVersion).state, found: found, request)
        // RFC 6749 section 6 and RFC 8707 section 2.2: a refresh may narrow the scopes, ask for
        // any audience the grant allows (every permitted one when the sign-in named none; for
        // families started before issue 65, when its audience is the client's default), or
        // switch audience by the client's refresh policy; never widen the scopes.
        let (scopes, audiences) = try ScopePolicy.refreshed(
            requestedScope: request.scope, resources: request.resources, granted: (started.scopes, started.audiences), client: client.settings,
            clientID: client.id,
            namedNoResource: started.requestedResources.map(\.isEmpty) ?? (started.audiences == [client.settings.defaultAudience ?? client.id]))
        let userState = try await users.actor(for: StreamNames.user(realm: client.realm, userID: userID))
            .current(atLeast: found.userVersion).state
        var profile: UserProfile?
        if TokenMinter.profileNeeded(scopes: scopes) {
            // The user's data key came with the lookup: the claims open without a round trip.
            if let sealedKey = found.sealedUserKey {
                try vault?.adopt(sealedKey: sealedKey, subject: PersonalDataVault.userSubject(userID))
            }
            profile = try await vault.profile(of: userState)
        }
        let (lifetimes, time) = (TokenLifetimes(try await realmSettings(client.realm)), now())
        var minted = try await minter.mint(
            TokenMinter.Request(
                realm: client.realm, issuer: request.issuer, clientID: client.id, format: client.settings.accessTokenFormat, user: userState,
                profile: profile, scopes: scopes, audiences: audiences, authTime: started.authTime, amr: started.amr, accessLifetime: lifetimes.access,
                refreshLifetime: lifetimes.refresh, dpopKey: request.dpopKey, acr: started.acr, attestation: client.attestation, deviceSession: started.deviceSession),
            now: time)
        // The access token's own scopes and audiences, when they are not the grant's.
        if scopes != started.scopes { minted.accessRecord.scopes = scopes }
        if audiences != started.audiences { minted.accessRecord.audiences = audiences }
        try await rotate(
            family, presented: presented, minted: minted, user: userState, started: started, lifetimes: lifetimes, at: time, metadata: request.metadata)
        return TokenResponse(
            accessToken: minted.accessToken, tokenType: minted.tokenType, expiresIn: minted.expiresIn, refreshToken: minted.refreshToken,
            scope: scopes.joined(separator: " "), idToken: minted.idToken)
    }

    /// The family's sign-in and its user, when this request may refresh it: the family is this
    /// client's, the client is still enabled with the same secret, the request holds the
    /// family's keys, and the sign-in is fresh and strong enough. Refused before anything is spent.
    private func admitted(_ familyState: TokenFamily.State, found: TokenTables.RefreshLookup, _ request: RefreshRequest) throws
        -> (TokenFamilyStarted, UUID)
    {
        let client = request.client
        guard let started = familyState.started, started.clientID == client.id, let userID = started.userID else {
            throw Self.invalidRefreshToken
        }
        // The client as the store has it now: this instance's copy may predate a disable, a
        // deletion or a secret rotation made on another instance (docs/architecture.md, "Caches").
        guard let enabled = found.clientEnabled else { throw OAuthError.invalidClient(attempted: client.secretHash != nil) }
        if client.settings.type == .confidential {
            guard let stored = found.clientSecretHash, let used = client.secretHash, ConstantTime.equal(stored, used) else {
                throw OAuthError.invalidClient(attempted: true)
            }
        }
        guard enabled else { throw OAuthError.invalidGrant("The OAuth client is disabled.") }
        try Self.checkKeyBindings(of: started, dpopKey: request.dpopKey, attestation: client.attestation)
        if let maxAge = request.maxAge, now().timeIntervalSince(started.authTime) > maxAge {
            throw OAuthError.invalidGrant("The sign-in is older than max_age: sign in again (the refresh token stays valid).")
        }
        // A refresh never makes a sign-in stronger either.
        guard AuthenticationContext.satisfies(started.acr ?? AuthenticationContext.acr(amr: started.amr), acrValues: request.acrValues) else {
            throw Self.unmetACR
        }
        return (started, userID)
    }

    /// The presented token's lookup (`TokenTables.refreshLookupQuery`), pipelined with the
    /// request's rate-limit count and its DPoP jti claim (`GrantChecks`: one round trip, one
    /// transaction). nil for an unknown token.
    private func lookUpRefreshToken(_ presented: String, realm: String, checks: GrantChecks) async throws -> TokenTables.RefreshLookup? {
        let lookup = TokenTables.refreshLookupQuery(presentedHash: presented, realm: realm)
        // The lookup joins two tables a rebuild of the token projection swaps: a deadlock with
        // the swap rolls back this (read-only but for the count and the claim) transaction,
        // which then runs again.
        let found: PQResult = try await retryingTransientConflicts { try await checks.run(lookup, on: pool) }
        return try TokenTables.refreshLookup(found)
    }

    /// Rotates the family to the minted tokens (the second round trip: the append); reuse of a
    /// spent token revokes the family instead, and a changed security stamp refuses.
    private func rotate(
        _ family: AggregateActor<TokenFamily>, presented: String, minted: TokenMinter.Minted, user: User.State, started: TokenFamilyStarted,
        lifetimes: TokenLifetimes, at time: Date,
        metadata: EventMetadata
    ) async throws {
        let outcome: CommandOutcome<TokenFamily>
        do {
            outcome = try await family.execute(
                .refresh(
                    presentedHash: presented, newRefreshHash: minted.refreshHash!, newRefreshExpiresAt: minted.refreshExpiresAt!,
                    accessToken: minted.accessRecord, userStamp: user.canSignIn ? user.securityStamp : nil,
                    sessionEndsAt: started.authTime.addingTimeInterval(lifetimes.session), reuseGrace: lifetimes.reuseGrace),
                now: time, metadata: metadata)
        } catch is DomainError {
            throw Self.invalidRefreshToken
        }
        guard case .refreshed = outcome.events.first else {
            // Reuse (the family is now revoked, an audited event) or a changed security stamp.
            throw Self.invalidRefreshToken
        }
    }

    /// A user's personal claims, opened (userinfo's `email` and `profile`).
    public func profile(of user: User.State) async throws -> UserProfile {
        try await vault.profile(of: user)
    }

    /// A user's current state (userinfo reads the claims from it).
    public func user(realm: String, id: UUID) async throws -> User.State {
        try await users.actor(for: StreamNames.user(realm: realm, userID: id)).current().state
    }

    /// Throws `SigningKeyRingError.noKey` when the realm cannot sign yet (checked first by the
    /// token endpoint, so a keyless realm refuses every sign-in the same way).
    public func requireSigningKey(realm: String) async throws {
        try await minter.keys.requireKey(realm: realm)
    }

    /// A realm's settings (held per instance by the realm directory).
    func realmSettings(_ realm: String) async throws -> RealmSettings {
        try await realms.requiredSettings(realm)
    }
}
