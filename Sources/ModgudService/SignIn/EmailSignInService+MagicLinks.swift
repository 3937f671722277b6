import EventSourcing
import Foundation
import ModgudDomain

/// Magic links (docs/spec.md section 3): issued to a known, active, confirmed user when the realm
/// allows them, redeemed once by `urn:cocoar:magic`.
extension EmailSignInService {
    /// Issues a magic link for a known, active, confirmed user when the realm allows them.
    public func requestMagicLink(email rawEmail: String, source: String, realm: RealmDirectory.Entry, issuer: String, metadata: EventMetadata)
        async throws
    {
        let settings = realm.settings
        try await limiter.check(.requestPerIP, key: source, realm: realm.realmID, settings: settings)
        guard let email = EmailAddress(rawEmail) else { throw InvalidEmailAddress() }
        try await limiter.check(.requestPerMailbox, key: mailboxKey(email.value), realm: realm.realmID, settings: settings)
        guard settings.magicLinksOn,
            let user = try await findUser(realm: realm.realmID, email: email, index: vault.blindIndex(email.value, realm: realm.realmID)),
            user.emailConfirmed, user.canSignIn, let userID = user.id
        else { return }
        let time = now()
        let token = OpaqueToken.generate()
        let base = (settings.publicBaseURL ?? issuer).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let link = "\(base)/magic-login?userId=\(userID.uuidString.lowercased())&token=\(token.token)"
        let issued = ChallengeIssued(
            challengeID: UUID(), purpose: .magicLink, userID: userID, secretHash: token.hash, issuedAt: time,
            expiresAt: time + Self.linkLifetime)
        let enqueue = try await outbox.enqueue(
            MailTemplates.magicLink(link, to: email.value, realmName: settings.displayName), realm: realm.realmID,
            sealing: .subject(PersonalDataVault.userSubject(userID)))
        let outcome = try await challengeActors.actor(for: StreamNames.magicLinks(realm: realm.realmID, userID: userID))
            .execute(.issue(issued, cooldown: Self.resendCooldown), now: time, metadata: metadata, extra: { _ in [enqueue] })
        if !outcome.events.isEmpty { mailEnqueued() }
    }

    /// grant_type=urn:cocoar:magic (docs/spec.md section 3). The link is consumed even when the
    /// TOTP code is still owed.
    public func redeemMagicLink(userID rawUserID: String, token: String, _ grant: GrantRequest) async throws -> TokenResponse {
        let invalid = OAuthError.invalidGrant("Invalid or expired link.")
        let realm = grant.client.realm
        guard let userID = UUID(uuidString: rawUserID), token.count <= 128 else { throw invalid }
        _ = try ScopePolicy.grantedScopes(requested: grant.scope, client: grant.client.settings)
        _ = try ScopePolicy.audiences(resources: grant.resources, allowed: grant.client.settings.audiences, clientID: grant.client.id)
        let userActor = await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
        let user = try await userActor.current().state
        // The common case (an active user without TOTP): the tokens are minted first and their
        // family commits with the consumed link, one transaction. Otherwise the link is
        // consumed first and the account and second factor are checked after.
        let direct =
            user.canSignIn && (try? secondFactor.check(grant.totpCode, user: user, realm: realm)) == .notRequired
            ? try await tokenService.prepareSignIn(
                client: grant.client, user: user, grantType: .magic, scope: grant.scope, resources: grant.resources, amr: ["email"],
                issuer: grant.issuer, dpopKey: grant.dpopKey)
            : nil
        let outcome: CommandOutcome<EmailChallenge>
        do {
            outcome = try await challengeActors.actor(for: StreamNames.magicLinks(realm: realm, userID: userID))
                .execute(
                    .redeem(presentedHash: OpaqueToken.hash(token)), now: now(), metadata: grant.metadata,
                    alsoAppending: { events in
                        guard let direct, events.contains(where: { if case .consumed = $0 { true } else { false } }) else { return [] }
                        return [try direct.write()]
                    })
        } catch is DomainError {
            throw invalid
        }
        guard outcome.events.contains(where: { if case .consumed = $0 { true } else { false } }) else { throw invalid }
        if let direct { return direct.response }
        guard user.canSignIn else { throw OAuthError.invalidGrant("The account cannot sign in.") }
        var amr = ["email"]
        switch try secondFactor.check(grant.totpCode, user: user, realm: realm) {
        case .notRequired: break
        case .missing: throw SecondFactor.refusal
        case .wrong: throw SecondFactor.refusal
        case .valid(let step):
            do {
                _ = try await userActor.execute(.acceptTOTPStep(step), now: now(), metadata: grant.metadata)
            } catch is DomainError {
                throw SecondFactor.refusal
            }
            amr = ["email", "otp", "mfa"]
        }
        return try await tokenService.signIn(
            client: grant.client, user: user, grantType: .magic, scope: grant.scope, resources: grant.resources, amr: amr,
            issuer: grant.issuer, dpopKey: grant.dpopKey, metadata: grant.metadata)
    }
}
