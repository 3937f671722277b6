import EventSourcing
import EventStorePostgres
import Foundation
import JWTKit
import ModgudDomain
import PQ
import WebAuthn

/// RFC 8693 token exchange of a provider's ID token for the realm's tokens (issue 48): the
/// token is verified (`IDTokenVerifier`), the sign-in's nonce spent, and then
///
/// - a linked provider account signs its user in (with TOTP when the user has it);
/// - an unknown one whose address has no account creates the user under the realm's posture,
///   linked in the same append;
/// - an unknown one whose address has an account is linked only as the provider's `Linking`
///   says: at once when the provider verified the address and the realm allows that, never
///   otherwise without an email code (`FederationError.refused("link_requires_email_code")`).
///
/// Nothing is created or linked on a refusal; the user, the link row and the token family
/// commit in one transaction, and the link table's keys decide races.
public struct FederatedSignIn: Sendable {
    /// What the app sent: the provider's ID token, the nonce it got from this server, and the
    /// names Apple hands the app once, at the first sign-in (not in the token).
    public struct Exchange: Sendable {
        public var idToken: String
        public var nonce: String?
        public var firstName: String?
        public var lastName: String?

        /// The token came from the provider's token endpoint, fetched by this server with the
        /// team's client secret (Apple's authorization code): its nonce is then optional.
        public var fromTokenEndpoint = false

        public init(idToken: String, nonce: String?, firstName: String? = nil, lastName: String? = nil) {
            self.idToken = idToken
            self.nonce = nonce
            self.firstName = firstName
            self.lastName = lastName
        }
    }

    let federation: Federation
    let users: AggregateRegistry<User>
    let families: AggregateRegistry<TokenFamily>
    let vault: PersonalDataVault
    /// Everything after the provider's proof (issue 68).
    let pipeline: SignInPipeline
    let pool: PQPool
    let now: @Sendable () -> Date

    /// The registration `via` of users a provider created.
    public static func via(_ provider: String) -> String { "federation:\(provider)" }

    public func exchange(_ exchange: Exchange, realm settings: RealmSettings, _ grant: UserGrantRequest) async throws -> TokenResponse {
        let realm = grant.client.realm
        try SignInPipeline.checkRequest(grant)
        let provider = try Self.provider(of: exchange.idToken, in: settings)
        var nonceHash: String?
        if (provider.requireNonce && !exchange.fromTokenEndpoint) || exchange.nonce != nil {
            guard let nonce = exchange.nonce else { throw FederationError.refused(reason: "nonce", detail: "this provider's exchange needs the nonce") }
            nonceHash = IDTokenVerifier.nonceHash(nonce)
        }
        let claims = try await federation.verifier.verify(exchange.idToken, provider: provider, nonceHash: nonceHash, now: now())
        // Spent only once the token holds: a forged token does not burn the app's nonce.
        if let nonce = exchange.nonce { try await federation.nonces.spend(nonce) }
        let index = subjectIndex(provider: provider.id, subject: claims.sub, realm: realm)
        if let userID = try await FederatedIdentitiesTable.user(realm: realm, provider: provider.id, subjectIndex: index, pool: pool) {
            return try await signIn(userID: userID, provider: provider.id, grant)
        }
        let email = try Self.address(claims)
        if let existing = try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool) {
            // Issue 69: a concurrent first sign-in of this provider account commits its user
            // and its link in one transaction. Seen the user, read the link again: when that
            // sign-in made the account, this one signs in to it (never a link session that
            // would only answer `account_linked`).
            if let linked = try await FederatedIdentitiesTable.user(realm: realm, provider: provider.id, subjectIndex: index, pool: pool) {
                return try await signIn(userID: linked, provider: provider.id, grant)
            }
            return try await link(existing, provider: provider, claims: claims, index: index, grant)
        }
        guard settings.registrationPosture != .off else {
            throw FederationError.refused(reason: "registration_closed", detail: "no account has this address, and sign-up is off in this realm")
        }
        return try await signUp(provider: provider, claims: claims, email: email, index: index, exchange: exchange, fields: settings.registrationFields, grant)
    }

    /// Auth0's `apple-authz-code` form: the authorization code Sign in with Apple gave the app
    /// is redeemed at Apple's token endpoint (`AppleAuthorizationCodes`), and Apple's ID token
    /// exchanged. Apple binds the code to the app's client id and spends it once, and the token
    /// comes to this server directly from Apple: a nonce is checked when the app sends one, not
    /// required (Auth0's SDKs send none).
    public func exchange(appleCode code: String, _ exchange: Exchange, realm settings: RealmSettings, _ grant: UserGrantRequest) async throws
        -> TokenResponse
    {
        try SignInPipeline.checkRequest(grant)
        guard let provider = (settings.federatedProviders ?? []).first(where: { $0.kind == .apple && $0.appleTokenEndpoint != nil }),
            let endpoint = provider.appleTokenEndpoint
        else { throw FederationError.refused(reason: "issuer", detail: "no Apple provider of this realm has Apple's token endpoint set") }
        var fetched = exchange
        fetched.idToken = try await federation.appleCodes.redeem(code, endpoint: endpoint, realm: grant.client.realm, provider: provider.id, now: now())
        fetched.fromTokenEndpoint = true
        return try await self.exchange(fetched, realm: settings, grant)
    }

    /// The configured provider whose issuer the token names (read unverified, only to choose
    /// whose keys verify it).
    static func provider(of token: String, in settings: RealmSettings) throws -> FederatedProvider {
        guard let issuer = try IDTokenVerifier.unverifiedClaims(token, what: "the subject_token")["iss"] as? String else {
            throw FederationError.refused(reason: "malformed", detail: "the subject_token is not a signed JWT")
        }
        guard let provider = (settings.federatedProviders ?? []).first(where: { $0.acceptedIssuers.contains(issuer) }) else {
            throw FederationError.refused(reason: "issuer", detail: "no provider of this realm issues tokens as \(issuer)")
        }
        return provider
    }

    /// The token's address, which the account is found and created by.
    static func address(_ claims: ProviderIDToken) throws -> EmailAddress {
        guard let text = claims.email, let email = EmailAddress(text) else {
            throw FederationError.refused(reason: "email_required", detail: "the ID token carries no email address (ask for the email scope)")
        }
        return email
    }

    /// A linked account: its user signs in, with TOTP when on (spent with the family).
    private func signIn(userID: UUID, provider: String, _ grant: UserGrantRequest) async throws -> TokenResponse {
        let actor = await users.actor(for: StreamNames.user(realm: grant.client.realm, userID: userID))
        let loaded = try await actor.current()
        let factor = SignInFactor.federated(provider: provider)
        let account = try pipeline.gate(factor, user: loaded.state, version: loaded.version, grant: grant)
        let signIn = try await pipeline.prepareOpen(factor, account, grant)
        guard let step = account.totpStep else {
            _ = try await families.actor(forNew: signIn.stream).execute(.start(signIn.started), now: signIn.started.authTime, metadata: grant.metadata)
            return signIn.response
        }
        do {
            _ = try await actor.execute(
                .acceptTOTPStep(step), now: now(), metadata: grant.metadata, onlyAtVersion: loaded.version, alsoAppending: { _ in [try signIn.write()] })
        } catch is DomainError {
            throw SecondFactor.refusal
        } catch EventStoreError.wrongExpectedVersion {
            throw SecondFactor.refusal
        }
        return signIn.response
    }

    /// An account with the token's address, not linked to this provider account yet.
    private func link(_ userID: UUID, provider: FederatedProvider, claims: ProviderIDToken, index: String, _ grant: UserGrantRequest) async throws
        -> TokenResponse
    {
        switch provider.linking {
        case .never:
            throw FederationError.refused(reason: "account_exists", detail: "an account has this address; sign in to it another way")
        case .emailCode:
            throw try linkSession(userID, provider: provider, claims: claims, grant, detail: "an account has this address; prove the mailbox with an email code to link it")
        case .verifiedEmail:
            guard claims.emailVerified?.value == true else {
                throw try linkSession(userID, provider: provider, claims: claims, grant, detail: "the provider did not verify this address; prove the mailbox with an email code")
            }
        }
        let realm = grant.client.realm
        let actor = await users.actor(for: StreamNames.user(realm: realm, userID: userID))
        let loaded = try await actor.current()
        let factor = SignInFactor.federated(provider: provider.id)
        let account = try pipeline.gate(factor, user: loaded.state, version: loaded.version, grant: grant)
        let signIn = try await pipeline.prepareOpen(factor, account, grant)
        let step = account.totpStep
        let subject = try await vault.seal(claims.sub, subject: PersonalDataVault.userSubject(userID), realm: realm)
        let insert = FederatedIdentitiesTable.insert(realm: realm, provider: provider.id, subjectIndex: index, userID: userID, now: now())
        do {
            _ = try await actor.execute(
                .linkIdentity(provider: provider.id, subject: .sealed(subject), via: "verified-email", totpStep: step), now: now(), metadata: grant.metadata,
                onlyAtVersion: loaded.version, extra: { _ in [insert] }, alsoAppending: { _ in [try signIn.write()] })
        } catch let taken where FederatedIdentitiesTable.isTaken(taken) {
            // A concurrent sign-in of this same provider account linked it first: sign in.
            if try await FederatedIdentitiesTable.user(realm: realm, provider: provider.id, subjectIndex: index, pool: pool) == userID {
                return try await self.signIn(userID: userID, provider: provider.id, grant)
            }
            throw FederationError.refused(reason: "account_linked", detail: "this account is linked to another \(provider.id) account")
        } catch EventStoreError.wrongExpectedVersion {
            throw SecondFactor.refusal
        }
        return signIn.response
    }

    /// The refusal that hands out a link session: an email code to the account's address,
    /// redeemed with it, links the provider account (`pendingLink`).
    private func linkSession(_ userID: UUID, provider: FederatedProvider, claims: ProviderIDToken, _ grant: UserGrantRequest, detail: String) throws
        -> FederationError
    {
        let links = federation.links
        let session = try links.issue(
            provider: provider.id, subject: claims.sub, userID: userID, realm: grant.client.realm, clientID: grant.client.id, now: now())
        return .linkNeedsEmailCode(session: session, expiresIn: links.lifetime, detail: detail)
    }

    /// What a link session a refused exchange handed out says, ready for the email code's
    /// redemption to commit: refused when the session is not this realm's and client's, or
    /// expired. The subject is sealed under the account's key, as every link's is.
    ///
    /// The request is counted first, before the session is opened (as any grant's is before
    /// its lookup); the proof's claim stays in `grant` for the code's own read.
    public func pendingLink(session: String, _ grant: inout UserGrantRequest) async throws -> PendingIdentityLink {
        try await grant.checks.sendCount(on: pool)
        let realm = grant.client.realm
        guard let claims = federation.links.open(session, realm: realm, clientID: grant.client.id, now: now()) else {
            throw OAuthError.invalidGrant("The link_session is not valid (expired, or not this client's).")
        }
        let subject = try await vault.seal(claims.subject, subject: PersonalDataVault.userSubject(claims.userID), realm: realm)
        return PendingIdentityLink(
            userID: claims.userID, provider: claims.provider, subject: .sealed(subject),
            subjectIndex: subjectIndex(provider: claims.provider, subject: claims.subject, realm: realm))
    }

    /// A new user, created by the provider's first sign-in, linked in the same append.
    private func signUp(
        provider: FederatedProvider, claims: ProviderIDToken, email: EmailAddress, index: String, exchange: Exchange, fields: RegistrationFields,
        _ grant: UserGrantRequest
    ) async throws -> TokenResponse {
        let realm = grant.client.realm
        let userID = UUID()
        let key = try vault.newSubject(PersonalDataVault.userSubject(userID), realm: realm, emailIndex: vault.blindIndex(email.value, realm: realm))
        let firstName = fields.firstname == .off ? nil : User.cleanName(exchange.firstName ?? claims.givenName)
        let lastName = fields.lastname == .off ? nil : User.cleanName(exchange.lastName ?? claims.familyName)
        let registered = UserRegistered(
            userID: userID, email: .sealed(try key.seal(email.value)), emailConfirmed: claims.emailVerified?.value == true, username: nil,
            firstName: try key.seal(firstName), lastName: try key.seal(lastName), securityStamp: OpaqueToken.generate().hash, via: Self.via(provider.id))
        let linked = UserIdentityLinked(provider: provider.id, subject: .sealed(try key.seal(claims.sub)), via: "sign-up")
        let signIn = try await pipeline.prepareOpen(.federated(provider: provider.id), .registering(registered), grant)
        _ = try await pool.query(key.insert)
        let keyCheck = SubjectKeysTable.requireKey(subject: PersonalDataVault.userSubject(userID))
        let insert = FederatedIdentitiesTable.insert(realm: realm, provider: provider.id, subjectIndex: index, userID: userID, now: now())
        do {
            _ = try await users.actor(forNew: StreamNames.user(realm: realm, userID: userID)).execute(
                .registerLinked(registered, linked), now: now(), metadata: grant.metadata, extra: { _ in [keyCheck, insert] },
                alsoAppending: { _ in [try signIn.write()] })
        } catch let taken where UsersTable.isAddressTaken(taken) || FederatedIdentitiesTable.isTaken(taken) {
            // Another sign-in won the race and nothing of this one was written. When it was this
            // same provider account's (issue 69), its user and link committed together: sign in
            // to that account. Otherwise (the address alone was taken) the app may try again,
            // and is then signed in or linked by the rules.
            if let linked = try await FederatedIdentitiesTable.user(realm: realm, provider: provider.id, subjectIndex: index, pool: pool) {
                return try await self.signIn(userID: linked, provider: provider.id, grant)
            }
            throw FederationError.refused(reason: "retry", detail: "another sign-in created this account meanwhile; try again")
        }
        return signIn.response
    }
}
