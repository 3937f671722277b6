import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// Magic links (docs/spec.md section 3): issued to a known, active, confirmed user when the realm
/// allows them, spent once by a complete `urn:cocoar:magic` sign-in.
extension EmailSignInService {
    /// Issues a magic link for a known, active, confirmed user when the realm allows them.
    /// - Parameter binding: the client the request named and its attested instance (issue 65):
    ///   only they can redeem the link.
    public func requestMagicLink(
        email rawEmail: String, source: String, realm: RealmDirectory.Entry, issuer: String, binding: FlowBinding, metadata: EventMetadata
    ) async throws {
        let settings = realm.settings
        try await limiter.check(.requestPerIP, key: source, realm: realm.realmID, settings: settings)
        guard let email = EmailAddress(rawEmail) else { throw InvalidEmailAddress() }
        try await limiter.check([RateLimitBucket(.requestPerMailbox, key: mailboxKey(email.value), mailbox: email.value)], realm: realm.realmID, settings: settings)
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
            expiresAt: time + Self.linkLifetime, binding: binding)
        let enqueue = try await outbox.enqueue(
            MailTemplates.magicLink(link, to: email.value, realmName: settings.displayName), realm: realm.realmID,
            sealing: .subject(PersonalDataVault.userSubject(userID)))
        let outcome = try await challengeActors.actor(for: StreamNames.magicLinks(realm: realm.realmID, userID: userID))
            .execute(.issue(issued, cooldown: Self.resendCooldown), now: time, metadata: metadata, extra: { _ in [enqueue] })
        if !outcome.events.isEmpty { mailEnqueued() }
    }

    /// The profile of a person who may sign in (for a step-up's code to their own address), or
    /// nil (unknown, erased, disabled).
    public func signInProfile(of userID: UUID, realm: String) async throws -> UserProfile? {
        let user = try await userActors.actor(for: StreamNames.user(realm: realm, userID: userID)).current().state
        guard user.id != nil, user.canSignIn else { return nil }
        return try await vault.profile(of: user)
    }

    /// Whether `rawUserID` is the account of `rawEmail` in the realm: a magic link brought to an
    /// Authorization Challenge session must be for the address the session named (issue 45).
    public func isAccount(_ rawUserID: String, of rawEmail: String, realm: String) async throws -> Bool {
        guard let email = EmailAddress(rawEmail), let userID = UUID(uuidString: rawUserID) else { return false }
        return try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool) == userID
    }

    /// grant_type=urn:cocoar:magic (docs/spec.md section 3). The account and its second factor
    /// are checked before the link is tried, and the link is spent only by a complete sign-in
    /// (issue 40): a missing `totp_code` writes nothing and a wrong one counts as a failed
    /// attempt (`EmailChallenge.maxAttempts` burn the link), so the retry with the right code
    /// signs in with the same link.
    public func redeemMagicLink(userID rawUserID: String, token: String, _ grant: UserGrantRequest) async throws -> TokenResponse {
        let realm = grant.client.realm
        let userID = try await grant.checks.countingRefusals(on: pool) {
            guard let valid = UUID(uuidString: rawUserID), token.count <= 128 else { throw Self.invalidLink }
            try SignInPipeline.checkRequest(grant)
            return valid
        }
        // The request's count and proof claim ride with the user's read (issue 49).
        let loaded = try await grant.checks.read(await userActors.actor(for: StreamNames.user(realm: realm, userID: userID)))
        // What the account owes besides the link, found before the command (the account's status
        // and second factor live in another stream); the challenge decides, after the link
        // itself: a wrong or spent link is "Invalid or expired link." whatever the account owes.
        let account = try pipeline.gate(.magicLink, user: loaded.state, version: loaded.version, grant: grant)
        // A complete sign-in: the tokens are minted first, and their family (with the spent TOTP
        // step, if any) commits with the consumed link, one transaction; a refused link discards
        // them unsent.
        let prepared = try await pipeline.prepare(.magicLink, account, grant)
        let outcome: CommandOutcome<EmailChallenge>
        do {
            outcome = try await challengeActors.actor(for: StreamNames.magicLinks(realm: realm, userID: userID))
                .execute(
                    .redeem(presentedHash: OpaqueToken.hash(token), gate: account.gate, by: grant.client.presenter), now: now(), metadata: grant.metadata,
                    alsoAppending: { events in events.consumeChallenge ? try SignInPipeline.writes(prepared, account, realm: realm) : [] })
        } catch {
            throw Self.refusal(for: error, registration: false, invalid: Self.invalidLink)
        }
        guard outcome.events.consumeChallenge, let signIn = prepared else {
            // A right link with a wrong second factor: counted against the link, which stays
            // live until the attempts burn it.
            if account.gate == .secondFactorWrong, hashMatches(outcome.events) { throw SecondFactor.refusal }
            throw Self.invalidLink
        }
        return signIn.response
    }

    public static let invalidLink = OAuthError.invalidGrant("Invalid or expired link.")
}
