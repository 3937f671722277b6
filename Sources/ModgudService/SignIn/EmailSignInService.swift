import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import SMTP

/// Email one-time codes and magic links (docs/spec.md sections 2 and 3): issuing them (a
/// challenge event and its outbox row in one transaction) and redeeming them for tokens.
/// Magic links are in `EmailSignInService+MagicLinks.swift`.
///
/// Requests answer the same whatever the address; the HTTP layer adds the jitter. Every
/// single-use rule is decided by the challenge stream's expected-version append, so it holds
/// across instances.
public struct EmailSignInService: Sendable {
    /// Code lifetime (docs/spec.md section 2).
    public static let codeLifetime: TimeInterval = 600
    /// Magic link lifetime (docs/spec.md section 3).
    public static let linkLifetime: TimeInterval = 900
    /// Silent resend cooldown for both.
    public static let resendCooldown: TimeInterval = 120

    let pool: PQPool
    let challengeActors: AggregateRegistry<EmailChallenge>
    let userActors: AggregateRegistry<User>
    let passkeyActors: AggregateRegistry<Passkey>
    let secrets: ServerSecrets
    let vault: PersonalDataVault
    let outbox: MailOutbox
    let limiter: RateLimiter
    /// Everything after the proof (issue 68).
    let pipeline: SignInPipeline
    let mailEnqueued: @Sendable () -> Void
    let now: @Sendable () -> Date

    public init(
        pool: PQPool, challenges: AggregateRegistry<EmailChallenge>, users: AggregateRegistry<User>, passkeys: AggregateRegistry<Passkey>,
        secrets: ServerSecrets,
        vault: PersonalDataVault, limiter: RateLimiter, tokenService: TokenService, mailEnqueued: @escaping @Sendable () -> Void,
        now: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.challengeActors = challenges
        self.userActors = users
        self.passkeyActors = passkeys
        self.secrets = secrets
        self.vault = vault
        self.outbox = MailOutbox(pool: pool, secrets: secrets, vault: vault)
        self.limiter = limiter
        self.pipeline = SignInPipeline(tokens: tokenService, secondFactor: SecondFactor(secrets: secrets, now: now))
        self.mailEnqueued = mailEnqueued
        self.now = now
    }

    /// What an app submits to ask for a code.
    public struct CodeRequest: Sendable {
        public var email: String
        public var username: String?
        public var firstName: String?
        public var lastName: String?
        /// The rate-limit key of the source network (see `SourceAddress`).
        public var source: String

        public init(email: String, username: String? = nil, firstName: String? = nil, lastName: String? = nil, source: String) {
            self.email = email
            self.username = username
            self.firstName = firstName
            self.lastName = lastName
            self.source = source
        }
    }

    /// Which endpoint asked.
    public enum CodeEndpoint: Sendable {
        /// POST /api/account/native/otp/request
        case otpRequest
        /// POST /api/account/native/register
        case register
    }

    /// A request refused before the uniform branch (the same for every address).
    public struct RequestRefused: Error, Sendable, Equatable {
        public var message: String
    }

    /// The address is not one (its syntax, not whether it exists: no enumeration signal).
    public struct InvalidEmailAddress: Error, Sendable, Equatable {}

    // MARK: Requests

    /// Issues a login code, a registration code, or nothing; the caller answers the same in
    /// every case. Throws `RequestRefused` for a missing required field and `RateLimited`.
    /// - Parameter binding: the client the request named and its attested instance (issue 65):
    ///   only they can redeem the code.
    public func requestCode(
        _ request: CodeRequest, endpoint: CodeEndpoint, realm: RealmDirectory.Entry, binding: FlowBinding, metadata: EventMetadata
    ) async throws {
        let settings = realm.settings
        let fields = settings.registrationFields
        try Self.checkRequiredNames(request, fields)
        try await limiter.check(.requestPerIP, key: request.source, realm: realm.realmID, settings: settings)
        // An address that is not one still counts against a mailbox key (its own text), so
        // malformed input is limited like any other.
        guard let email = EmailAddress(request.email) else { throw InvalidEmailAddress() }
        try await limiter.check([RateLimitBucket(.requestPerMailbox, key: mailboxKey(email.value), mailbox: email.value)], realm: realm.realmID, settings: settings)
        // Seed 001: the explicit registration endpoint does nothing under any posture but
        // ExplicitEndpoint (it never doubles the JIT path, nor mails a known user a login code);
        // the caller still answers the uniform message after the jitter.
        guard endpoint != .register || settings.registrationPosture == .explicitEndpoint else { return }

        let time = now()
        let index = vault.blindIndex(email.value, realm: realm.realmID)
        // An unproven passkey sign-up does not hold the address against its owner (issue 14):
        // the owner gets a registration code, and redeeming it retires that account.
        let account = try await findUser(realm: realm.realmID, email: email, index: index).flatMap { $0.isUnprovenPasskeySignUp ? nil : $0 }
        let issued: ChallengeIssued
        let sealing: MailOutbox.Sealing
        var statements: [PQQuery] = []
        let code = OneTimeCode.generate()
        let hash = secrets.codes.hash(code, for: Self.codeBinding(realm: realm.realmID, email: email))
        switch (account, endpoint, settings.registrationPosture) {
        case (.some(let user), _, _):
            // Step 3: a known, confirmed, active user gets a login code; anyone else nothing.
            // The event names the user: no address (issue 13).
            guard user.emailConfirmed, user.canSignIn, let userID = user.id else { return }
            issued = ChallengeIssued(
                challengeID: UUID(), purpose: .loginCode, userID: userID, secretHash: hash, issuedAt: time, expiresAt: time + Self.codeLifetime,
                binding: binding)
            sealing = .subject(PersonalDataVault.userSubject(userID))
        case (.none, .otpRequest, .jitOnOtp), (.none, .register, .explicitEndpoint):
            // A pending registration: no user exists until the code is proven. The silent
            // sign-up cap per source applies here (a 429 would tell the address is new).
            guard try await limiter.admitSilently(RateLimitBucket(.signupPerIP, key: request.source), realm: realm.realmID, settings: settings)
            else { return }
            let pending = try registrationChallenge(
                email: email, index: index, realm: realm.realmID, secretHash: hash, time: time,
                names: (Self.field(request.username, fields.username), Self.field(request.firstName, fields.firstname),
                        Self.field(request.lastName, fields.lastname)), binding: binding)
            issued = pending.issued
            sealing = .newSubject(pending.key)
            statements.append(pending.key.insert)
        default:
            return
        }
        let mail = MailTemplates.code(code, to: email.value, realmName: settings.displayName, registration: issued.purpose == .registrationCode)
        statements.append(try await outbox.enqueue(mail, realm: realm.realmID, sealing: sealing))
        let extra = statements
        let outcome = try await challengeActors.actor(for: codeStream(realm: realm.realmID, email: email, day: time))
            .execute(.issue(issued, cooldown: Self.resendCooldown), now: time, metadata: metadata, extra: { _ in extra })
        if !outcome.events.isEmpty { mailEnqueued() }
    }

    /// docs/spec.md section 2 step 2: required names first, whatever the address. The username
    /// is never required on native paths: it is the email (the seed's rule).
    static func checkRequiredNames(_ request: CodeRequest, _ fields: RegistrationFields) throws(RequestRefused) {
        if let label = missingNames(firstName: request.firstName, lastName: request.lastName, fields).first {
            throw RequestRefused(message: "\(label.rawValue) is required.")
        }
    }

    /// A name a realm may require of a new person (`RegistrationFields`).
    public enum RequiredName: String, Sendable, CaseIterable {
        case firstName = "Firstname"
        case lastName = "Lastname"
    }

    /// The names `fields` requires that are missing or blank, in the order they are asked for
    /// (what `checkRequiredNames` refuses; the Authorization Challenge Endpoint asks for them).
    public static func missingNames(firstName: String?, lastName: String?, _ fields: RegistrationFields) -> [RequiredName] {
        [(fields.firstname, firstName, RequiredName.firstName), (fields.lastname, lastName, .lastName)].compactMap { requirement, value, label in
            requirement == .required && (value ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? label : nil
        }
    }

    // MARK: Helpers

    /// A registration code's event: the address and names sealed under the key of the user the
    /// code will create (issue 13). `key.insert` stores that key, with the address's blind index,
    /// and must commit with the event.
    func registrationChallenge(
        email: EmailAddress, index: String, realm: String, secretHash: String, time: Date,
        names: (username: String?, firstName: String?, lastName: String?) = (nil, nil, nil), binding: FlowBinding = .unbound
    ) throws -> (issued: ChallengeIssued, key: NewSubjectKey) {
        let registrant = UUID()
        let key = try vault.newSubject(PersonalDataVault.userSubject(registrant), realm: realm, emailIndex: index)
        let issued = ChallengeIssued(
            challengeID: UUID(), purpose: .registrationCode, email: .sealed(try key.seal(email.value)), registrantID: registrant,
            username: try key.seal(User.cleanName(names.username)), firstName: try key.seal(User.cleanName(names.firstName)),
            lastName: try key.seal(User.cleanName(names.lastName)), secretHash: secretHash, issuedAt: time,
            expiresAt: time + Self.codeLifetime, binding: binding)
        return (issued, key)
    }

    func hashMatches(_ events: [EmailChallengeEvent]) -> Bool {
        events.contains { if case .attemptFailed(let failed) = $0 { failed.reason == .wrongSecondFactor } else { false } }
    }

    func findUser(realm: String, email: EmailAddress, index: String) async throws -> User.State? {
        guard let id = try await UsersTable.userID(realm: realm, email: email, index: index, pool: pool) else { return nil }
        return try await userActors.actor(for: StreamNames.user(realm: realm, userID: id)).current().state
    }

    /// The address's code stream of the UTC day of `day`.
    func codeStream(realm: String, email: EmailAddress, day: Date) -> StreamRef {
        StreamNames.emailCodes(realm: realm, key: vault.codeStreamKey(email.value, realm: realm, day: PersonalDataVault.dayText(day)))
    }

    /// The live code of an address: in today's stream, or (just after midnight UTC) in
    /// yesterday's. A grant's `checks` go with the first read.
    func liveCode(realm: String, email: EmailAddress, checking checks: GrantChecks = .none) async throws
        -> (AggregateActor<EmailChallenge>, ChallengeIssued)?
    {
        let time = now()
        var checks = checks
        for day in [time, time - Self.codeLifetime] {
            let challenge = await challengeActors.actor(for: codeStream(realm: realm, email: email, day: day))
            let current = try await checks.read(challenge).state
            checks = .none
            if let issued = current.current, current.isLive(at: time) { return (challenge, issued) }
            if PersonalDataVault.dayText(day) == PersonalDataVault.dayText(time - Self.codeLifetime) { break }
        }
        return nil
    }

    /// What a code hash is bound to: the realm and the address (a code for one address is
    /// worthless for another).
    static func codeBinding(realm: String, email: EmailAddress) -> String { "\(realm)\u{0}\(email.value)" }

    /// Mailboxes are rate-limited by a peppered hash, so the limits table holds no addresses
    /// (not even ones a dictionary of known addresses could recover).
    func mailboxKey(_ address: String) -> String { secrets.codes.hash("rate-limit", for: address.lowercased()) }

    /// A submitted name kept only when the realm asks for that field.
    static func field(_ value: String?, _ requirement: FieldRequirement) -> String? {
        requirement == .off ? nil : value
    }
}
