import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// grant_type=urn:cocoar:otp (docs/spec.md section 2): a login code signs a user in, a
/// registration code creates the user, in the transaction that consumes the code.
extension EmailSignInService {
    /// Redeems an email code. Failures are `OAuthError`s; every wrong, expired, burned or used
    /// code is the same "Invalid or expired code.". With `link`, a login code of the link's
    /// account also links the provider account (issue 48), in the code's transaction.
    public func redeemCode(email rawEmail: String, code: String, _ grant: UserGrantRequest, linking link: PendingIdentityLink? = nil)
        async throws -> TokenResponse
    {
        let realm = grant.client.realm
        let email = try await grant.checks.countingRefusals(on: pool) {
            guard let valid = EmailAddress(rawEmail), code.count == 6, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else {
                throw Self.invalidCode
            }
            try SignInPipeline.checkRequest(grant)
            return valid
        }
        // The request's count and proof claim ride with the code's read (issue 49).
        guard let (challenge, issued) = try await liveCode(realm: realm, email: email, checking: grant.checks) else { throw Self.invalidCode }
        // Another client's or instance's code (issue 65) is a wrong one, before anything else is
        // looked at; the challenge's command decides it again at the append.
        guard issued.binding.admits(grant.client.presenter) else { throw Self.invalidCode }
        if let link, issued.purpose != .loginCode || issued.userID != link.userID {
            throw OAuthError.invalidGrant("The link_session belongs to another account than this code's address.")
        }
        let registration = try await registration(issued, email: email, realm: realm)
        let account = try await accountGate(issued, registering: registration.event, grant: grant)
        let redemption = CodeRedemption(
            challenge: challenge, issued: issued, realm: realm, metadata: grant.metadata, now: now(),
            redeem: .redeem(
                presentedHash: secrets.codes.hash(code, for: Self.codeBinding(realm: realm, email: email)), gate: account.gate,
                by: grant.client.presenter),
            registration: registration, account: account, link: try link.flatMap { try identityLink($0, account: account, realm: realm) },
            signIn: try await pipeline.prepare(.emailCode, account, grant))
        let outcome: CommandOutcome<EmailChallenge>
        do {
            do {
                outcome = try await redemption.consume(retiring: [])
            } catch let taken where UsersTable.isAddressTaken(taken) && issued.purpose == .registrationCode {
                // The address is held (the unique address index refused the new user; nothing
                // was written). Proof of the mailbox wins (issue 14): an unproven passkey sign-up
                // holding it is retired, with its passkeys, in the transaction that creates the
                // owner's account. Looked up only here, so an ordinary sign-up pays nothing.
                let retirement = try await retirementOfUnprovenAccount(realm: realm, email: email)
                guard !retirement.isEmpty else { throw Self.invalidCode }
                outcome = try await redemption.consume(retiring: retirement)
            }
        } catch {
            throw Self.refusal(for: error, registration: issued.purpose == .registrationCode)
        }
        guard outcome.events.consumeChallenge else {
            if account.gate == .secondFactorWrong, hashMatches(outcome.events) { throw SecondFactor.refusal }
            throw Self.invalidCode
        }
        guard let signIn = redemption.signIn else { throw Self.invalidCode }
        var response = signIn.response
        response.userIsNew = issued.purpose == .registrationCode
        return response
    }

    /// The one answer to a wrong, spent or expired code (Auth0's paths word it as Auth0 does).
    public static let invalidCode = OAuthError.invalidGrant("Invalid or expired code.")

    /// What a failed consumption of a code or a link answers; nothing was written in any of
    /// these cases, so the code or link stays as it was.
    /// - Parameter invalid: the answer for a wrong, spent or expired code or link.
    static func refusal(for error: any Error, registration: Bool, invalid: OAuthError = invalidCode) -> any Error {
        switch error {
        case let refused as DomainError where refused == EmailChallenge.accountCannotSignIn:
            return OAuthError.invalidGrant("The account cannot sign in.")
        case let refused as DomainError where refused == EmailChallenge.secondFactorRequired:
            return SecondFactor.refusal
        case is DomainError:
            return invalid
        case EventStoreError.wrongExpectedVersion:
            // A retired account changed meanwhile (the code can be tried again), or the user's
            // TOTP step was taken meanwhile (the code or link is unspent).
            return registration ? invalid : SecondFactor.refusal
        case let taken where FederatedIdentitiesTable.isTaken(taken):
            return Self.alreadyLinked  // the provider account was linked meanwhile
        case let taken where UsersTable.isAddressTaken(taken):
            return invalidCode  // the address got an account meanwhile (unique email)
        case let failure as PQError where failure.meansSubjectKeyMissing:
            return invalidCode  // the address was erased while its code was out
        default:
            return error
        }
    }

    /// A link to a provider account that is linked already (to this user or another).
    static let alreadyLinked = OAuthError.invalidGrant("account_linked: this provider account, or this account's link to the provider, exists already.")

    /// The link's write to the user's stream at the version the gate was found at (with the
    /// accepted TOTP step, when one was given) and its lookup row. Nothing when the gate is
    /// shut: the code is not consumed then.
    private func identityLink(_ link: PendingIdentityLink, account: AccountGate, realm: String) throws -> CodeRedemption.IdentityLink? {
        guard account.gate == .open, let user = account.user else { return nil }
        let events: [UserEvent]
        do {
            events = try User.decide(
                .linkIdentity(provider: link.provider, subject: link.subject, via: PendingIdentityLink.via, totpStep: account.totpStep), state: user,
                now: now())
        } catch {
            throw Self.alreadyLinked
        }
        let write = StreamWrite(
            stream: StreamNames.user(realm: realm, userID: link.userID), expected: ExpectedVersion(current: account.userVersion),
            events: try events.map { try $0.newEvent() })
        return CodeRedemption.IdentityLink(write: write, insert: link.insert(realm: realm, now: now()))
    }

    /// The account's gate (`SignInPipeline.gate`): a login code's user as loaded, a
    /// registration code's new user open.
    private func accountGate(_ issued: ChallengeIssued, registering registered: UserRegistered, grant: UserGrantRequest) async throws -> AccountGate {
        guard issued.purpose == .loginCode else { return .registering(registered) }
        guard let userID = issued.userID else { throw Self.invalidCode }
        let loaded = try await userActors.actor(for: StreamNames.user(realm: grant.client.realm, userID: userID)).current()
        return try pipeline.gate(.emailCode, user: loaded.state, version: loaded.version, grant: grant)
    }

    /// A registration code's new user, and the statement that checks its key still exists.
    struct Registration {
        var userID: UUID
        var event: UserRegistered
        var keyCheck: PQQuery?
    }

    /// Registration: the user and the consumed code commit together, or neither does. The
    /// personal fields were sealed for this user when the code was issued: copied unopened.
    private func registration(_ issued: ChallengeIssued, email: EmailAddress, realm: String) async throws -> Registration {
        let userID = issued.registrantID ?? UUID()
        var registered = UserRegistered(
            userID: userID, email: issued.email ?? .plain(email.value), emailConfirmed: true, username: issued.username,
            firstName: issued.firstName, lastName: issued.lastName, securityStamp: OpaqueToken.generate().hash, via: "urn:cocoar:otp")
        guard issued.purpose == .registrationCode else { return Registration(userID: userID, event: registered) }
        if let registrant = issued.registrantID {
            // The registrant's key must still exist when the user commits (an address erased
            // while its code was out): checked in the transaction, by the database.
            return Registration(userID: userID, event: registered, keyCheck: SubjectKeysTable.requireKey(subject: PersonalDataVault.userSubject(registrant)))
        }
        // A code issued before sealing began: the user's fields are sealed now, under a key
        // stored first (the users projection reads the blind index beside it; a redemption that
        // then fails leaves a key maintenance removes).
        let key = try vault.newSubject(PersonalDataVault.userSubject(userID), realm: realm, emailIndex: vault.blindIndex(email.value, realm: realm))
        registered.email = .sealed(try key.seal(email.value))
        registered.username = try key.seal(try await vault.open(issued.username))
        registered.firstName = try key.seal(try await vault.open(issued.firstName))
        registered.lastName = try key.seal(try await vault.open(issued.lastName))
        _ = try await pool.query(key.insert)
        return Registration(userID: userID, event: registered)
    }
}

/// One code redemption's command and everything that commits with a consumed code.
struct CodeRedemption: Sendable {
    let challenge: AggregateActor<EmailChallenge>
    let issued: ChallengeIssued
    let realm: String
    let metadata: EventMetadata
    let now: Date
    let redeem: EmailChallenge.Command
    let registration: EmailSignInService.Registration
    let account: AccountGate
    /// A provider account linked by this code (issue 48).
    let link: IdentityLink?
    let signIn: PreparedSignIn?

    /// The user's link event (and spent TOTP step) and the lookup row.
    struct IdentityLink: Sendable {
        var write: StreamWrite
        var insert: PQQuery
    }

    /// Redeems the code; a consumed code appends, in its transaction, the sign-in's token
    /// family and either the registration's user (after `retirement`, the retired holder of
    /// the address) or the spent TOTP step.
    func consume(retiring retirement: [StreamWrite]) async throws -> CommandOutcome<EmailChallenge> {
        let extra = [registration.keyCheck, link?.insert].compactMap { $0 }
        return try await challenge.execute(
            redeem, now: now, metadata: metadata,
            extra: { events in events.consumeChallenge ? extra : [] },
            alsoAppending: { events in events.consumeChallenge ? try writes(retiring: retirement) : [] })
    }

    private func writes(retiring retirement: [StreamWrite]) throws -> [StreamWrite] {
        let family = try signIn.map { [try $0.write()] } ?? []
        if issued.purpose == .registrationCode {
            let user = StreamWrite(
                stream: StreamNames.user(realm: realm, userID: registration.userID), expected: .noStream,
                events: [try NewEvent(registration.event)])
            return retirement + [user] + family
        }
        // The TOTP step is spent in the same transaction (`SignInPipeline.writes`): a replay of
        // the same TOTP code (or a concurrent one) loses on the user's stream version.
        if let link { return [link.write] + family }  // the link's write carries the TOTP step
        return try SignInPipeline.writes(signIn, account, realm: realm)
    }
}
