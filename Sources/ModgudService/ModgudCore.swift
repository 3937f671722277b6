import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import Logging
import PQ

/// The composition root of one instance: the store with its inline projections, the
/// aggregate registries and the services above them. Built once at start-up, where the
/// services are taken from it; no type keeps it (`ArchitectureFitnessTests`). Its pool, store,
/// registries and keys are its own: callers get services.
public struct ModgudCore: Sendable {
    let pool: PQPool
    let store: PostgresEventStore
    let realmActors: AggregateRegistry<Realm>
    let clientActors: AggregateRegistry<Client>
    let userActors: AggregateRegistry<User>
    let familyActors: AggregateRegistry<TokenFamily>
    public let keys: SigningKeyRing
    /// Each realm's audit log key (checkpoints only).
    let auditKeys: AuditLogKeys
    /// DPoP proof checks (RFC 9449); nil in tools started without the master key.
    public let dpop: DPoPVerifier?
    public let tokenService: TokenService
    public let clientAuthenticator: ClientAuthenticator
    public let realmDirectory: RealmDirectory
    let challengeActors: AggregateRegistry<EmailChallenge>
    let ceremonyActors: AggregateRegistry<PasskeyCeremony>
    let passkeyActors: AggregateRegistry<Passkey>
    /// First-party `auth_session`s (issue 45).
    let authorizationSessionActors: AggregateRegistry<AuthorizationSession>
    /// Device authorizations (RFC 8628, issue 69).
    let deviceAuthorizationActors: AggregateRegistry<DeviceAuthorization>
    /// Passkey ceremonies, the passkey grant and passkey management.
    public let passkeys: PasskeyService
    public let rateLimiter: RateLimiter
    /// Readiness for load balancers (`/health/ready`), and the drain switch.
    public let readiness: ReadinessProbe
    /// Keys derived from the master key; nil in tools started without one.
    let secrets: ServerSecrets?
    /// Personal data keys (issue 13); nil in tools started without the master key.
    let vault: PersonalDataVault?
    /// The clock every service of this instance reads (tests inject one).
    public let now: @Sendable () -> Date
    private let mailDoorbell: Doorbell
    private let emailSignInMade: Result<EmailSignInService, MasterKeyMissing>
    private let totpMade: Result<TOTPEnrollment, MasterKeyMissing>
    private let recoveryCodesMade: Result<RecoveryCodeService, MasterKeyMissing>
    /// Receivers' Shared Signals streams (issue 30).
    let signalStreamActors: AggregateRegistry<SignalStream>
    /// Operators' console actions that change no aggregate of their own (issue 31).
    let operatorLogActors: AggregateRegistry<OperatorLog>
    /// Wakes this instance's push loop and long polls when SETs are enqueued.
    let signalWakeups = SignalWakeups()
    /// Readiness, projections and their rebuilds, the outboxes' dead letters (the console's).
    public let operations: OperationsService
    /// How a settings change reaches every instance's caches.
    public let settingsNotifier: SettingsNotifier
    /// Realm, client and user administration and the audit queries (CLI, admin API, console).
    public let administration: Administration
    /// Erasure of a person (GDPR Article 17).
    public let eraser: UserEraser
    /// Attestation-based client authentication (issue 47): the authorization server's checks
    /// and the attester; nil in tools started without the master key.
    public let clientAttestation: ClientAttestationVerifier?
    public let attester: ClientAttester?
    /// ID token exchanges (issue 48); nil in tools started without the master key.
    public let federation: Federation?

    /// - Parameters:
    ///   - masterKey: 32 bytes sealing the realms' private signing keys (nil: a tool that never signs).
    ///   - now: the clock (tests inject one).
    ///   - settingsMaxAge: how long realm and client settings are held per instance without a
    ///     notification (the backstop for a lost NOTIFY; tests lengthen it to prove NOTIFY alone).
    ///   - groupCommit: how concurrent appends share commits; nil commits each alone.
    ///   - attestationRoots: the roots the attester trusts (the platforms' published roots by default).
    public init(
        pool: PQPool, masterKey: [UInt8]?, now: @escaping @Sendable () -> Date = { Date() }, settingsMaxAge: Duration = .seconds(5),
        groupCommit: AppendBatcher.Options? = AppendBatcher.Options(), attestationRoots: AttestationRoots = .published
    ) throws {
        self.pool = pool
        let vault = try masterKey.map { try PersonalDataVault(pool: pool, masterKey: $0) }
        self.vault = vault
        var sealer: (@Sendable (EventMetadata) async throws -> EventMetadata)?
        if let vault { sealer = { metadata in try await vault.sealingAddress(metadata, at: now()) } }
        store = PostgresEventStore(pool: pool, inlineProjections: ProjectionCatalog.identity, metadataSealer: sealer, groupCommit: groupCommit)
        realmActors = AggregateRegistry(store: store)
        clientActors = AggregateRegistry(store: store)
        userActors = AggregateRegistry(store: store)
        familyActors = AggregateRegistry(store: store)
        keys = SigningKeyRing(pool: pool, sealer: try masterKey.map { try KeySealer(masterKey: $0) }, realms: realmActors)
        auditKeys = AuditLogKeys(pool: pool, sealer: try masterKey.map { try KeySealer(masterKey: $0) })
        dpop = masterKey.map { DPoPVerifier(pool: pool, nonces: DPoPNonces(masterKey: $0), clock: now) }
        realmDirectory = RealmDirectory(pool: pool, maxAge: settingsMaxAge)
        tokenService = TokenService(
            pool: pool, families: familyActors, users: userActors, minter: TokenMinter(keys: keys), realms: realmDirectory, vault: vault, now: now)
        clientAuthenticator = ClientAuthenticator(pool: pool, maxAge: settingsMaxAge)
        challengeActors = AggregateRegistry(store: store)
        ceremonyActors = AggregateRegistry(store: store)
        passkeyActors = AggregateRegistry(store: store)
        (authorizationSessionActors, deviceAuthorizationActors) = (AggregateRegistry(store: store), AggregateRegistry(store: store))
        passkeys = PasskeyService(
            pool: pool, ceremonies: ceremonyActors, passkeys: passkeyActors, users: userActors, clients: clientAuthenticator, tokenService: tokenService,
            now: now)
        rateLimiter = RateLimiter(pool: pool, masterKey: masterKey, trips: Self.rateLimitTrips(store: store, vault: vault, pool: pool, now: now), now: now)
        readiness = ReadinessProbe(pool: pool)
        secrets = try masterKey.map { try ServerSecrets(masterKey: $0) }
        signalStreamActors = AggregateRegistry(store: store)
        operatorLogActors = AggregateRegistry(store: store)
        operations = OperationsService(pool: pool, readiness: readiness, secrets: secrets, vault: vault)
        self.now = now
        let doorbell = Doorbell()
        mailDoorbell = doorbell
        let (challenges, users, passkeyActors, limiter, tokens) = (challengeActors, userActors, passkeyActors, rateLimiter, tokenService)
        emailSignInMade = Self.withMasterKey(secrets, vault) { secrets, vault in
            EmailSignInService(
                pool: pool, challenges: challenges, users: users, passkeys: passkeyActors, secrets: secrets, vault: vault, limiter: limiter,
                tokenService: tokens, mailEnqueued: { doorbell.ring() }, now: now)
        }
        let totp = Self.withMasterKey(secrets, vault) { secrets, vault in TOTPEnrollment(users: users, secrets: secrets, vault: vault, now: now) }
        totpMade = totp
        let recovery = Self.withMasterKey(secrets, vault) { secrets, vault in
            RecoveryCodeService(pool: pool, users: users, tokenService: tokens, limiter: limiter, vault: vault, secrets: secrets, now: now)
        }
        recoveryCodesMade = recovery
        let notifier = SettingsNotifier(pool: pool, invalidate: Self.invalidation(realms: realmDirectory, keys: keys, clients: clientAuthenticator, vault: vault))
        settingsNotifier = notifier
        eraser = UserEraser(
            users: userActors, familyActors: familyActors, tokens: tokenService, passkeys: passkeys, vault: vault, pool: pool, store: store, notifier: notifier,
            now: now)
        (clientAttestation, attester, federation) = Self.clientFacing(pool, masterKey, keys, clientAuthenticator, attestationRoots, now)
        administration = Self.administration(
            realms: realmActors, clients: clientActors, users: userActors, families: familyActors, keys: keys, auditKeys: auditKeys, tokens: tokenService,
            passkeys: passkeys, vault: vault, sealer: secrets?.sealer, totp: { try totp.get() }, recoveryCodes: { try recovery.get() }, eraser: eraser,
            pool: pool, settings: notifier, now: now)
    }

    /// The recorder of tripped rate limits; a per-mailbox trip names the address's account
    /// by its blind index (none without the master key).
    private static func rateLimitTrips(store: PostgresEventStore, vault: PersonalDataVault?, pool: PQPool, now: @escaping @Sendable () -> Date)
        -> RateLimitTrips
    {
        RateLimitTrips(
            log: AggregateRegistry(store: store, capacity: 1_000),
            accountOf: { realm, address in
                guard let vault, let email = EmailAddress(address) else { return nil }
                return try await UsersTable.userID(realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool)
            }, now: now)
    }

    /// The services apps reach beside sign-in that need the master key: the authorization
    /// server's attestation checks and the attester (issue 47), and ID token exchanges (issue 48).
    private static func clientFacing(
        _ pool: PQPool, _ masterKey: [UInt8]?, _ keys: SigningKeyRing, _ clients: ClientAuthenticator, _ roots: AttestationRoots,
        _ now: @escaping @Sendable () -> Date
    ) -> (ClientAttestationVerifier?, ClientAttester?, Federation?) {
        guard let masterKey, let sealer = try? KeySealer(masterKey: masterKey) else { return (nil, nil, nil) }
        let verifier = ClientAttestationVerifier(pool: pool, keys: keys, challenges: AttestationChallenges(masterKey: masterKey), clock: now)
        let attester = ClientAttester(
            pool: pool, keys: keys, verifier: verifier, clients: clients, roots: roots, sealer: sealer, clock: now)
        return (verifier, attester, Federation(masterKey: masterKey, sealer: sealer, pool: pool, clock: now))
    }

    /// A service that needs the master key's parts, or `MasterKeyMissing` in a tool started without it.
    private static func withMasterKey<T>(_ secrets: ServerSecrets?, _ vault: PersonalDataVault?, _ make: (ServerSecrets, PersonalDataVault) -> T)
        -> Result<T, MasterKeyMissing>
    {
        guard let secrets, let vault else { return .failure(MasterKeyMissing()) }
        return .success(make(secrets, vault))
    }

    private static func administration(
        realms: AggregateRegistry<Realm>, clients: AggregateRegistry<Client>, users: AggregateRegistry<User>, families: AggregateRegistry<TokenFamily>,
        keys: SigningKeyRing, auditKeys: AuditLogKeys, tokens: TokenService, passkeys: PasskeyService, vault: PersonalDataVault?, sealer: KeySealer?,
        totp: @escaping @Sendable () throws -> TOTPEnrollment, recoveryCodes: @escaping @Sendable () throws -> RecoveryCodeService,
        eraser: UserEraser, pool: PQPool, settings: SettingsNotifier, now: @escaping @Sendable () -> Date
    ) -> Administration {
        Administration(
            realms: RealmAdministration(realms: realms, keys: keys, passkeys: passkeys, pool: pool, notifier: settings, sealer: sealer, now: now),
            clients: ClientAdministration(clients: clients, realms: realms, passkeys: passkeys, pool: pool, notifier: settings, sealer: sealer, now: now),
            users: UserAdministration(
                users: users, realms: realms, families: families, tokens: tokens, passkeyService: passkeys, vault: vault, pool: pool, eraser: eraser,
                totp: totp, recoveryCodes: recoveryCodes, now: now),
            audit: AuditQueries(pool: pool, tokens: tokens, users: users, vault: vault, auditKeys: auditKeys), clock: now)
    }

    /// Signs SETs at delivery (push and poll alike).
    var signalIssuer: SignalSETIssuer {
        SignalSETIssuer(keys: keys, users: userActors, vault: vault, clients: clientAuthenticator)
    }

    /// The Authorization Challenge Endpoint's sessions and codes (issue 45).
    public var firstParty: FirstPartyAuthorization {
        FirstPartyAuthorization(pool: pool, sessions: authorizationSessionActors, now: now)
    }

    /// The device authorization grant (RFC 8628, issue 69); throws `MasterKeyMissing` without
    /// the master key (user codes are hashed under a key derived from it).
    public var deviceAuthorizations: @Sendable () throws -> DeviceAuthorizationService {
        guard let secrets else { return { throw MasterKeyMissing() } }
        let service = DeviceAuthorizationService(
            pool: pool, authorizations: deviceAuthorizationActors, tokens: tokenService, passkeys: passkeys, userCodeKey: secrets.userCodes, now: now)
        return { service }
    }

    /// The Shared Signals Stream Management API and the poll endpoint (issue 30).
    public var signalStreams: SignalStreamService {
        SignalStreamService(
            pool: pool, streams: signalStreamActors, users: userActors, vault: vault, sealer: secrets?.sealer, issuer: signalIssuer,
            wakeups: signalWakeups, now: now)
    }

    /// The log follower that enqueues SETs; it rings this instance's wakeups after each batch.
    public func makeSignalTransmitter() -> SignalTransmitter {
        let wakeups = signalWakeups
        return SignalTransmitter(pool: pool, enqueued: { wakeups.ring() })
    }

    /// What rings this instance's SET wakeups whenever another instance enqueues (NOTIFY
    /// `modgud_ssf`), and at least every second, until cancelled.
    public func makeSignalRelay() -> @Sendable () async -> Void {
        let (configuration, wakeups) = (pool.configuration, signalWakeups)
        return {
            let listener = NotificationListener(configuration: configuration, channel: SignalTables.channel)
            while !Task.isCancelled {
                await listener.wait(timeout: .seconds(1))
                wakeups.ring()
            }
            await listener.close()
        }
    }

    /// This instance's push deliverer.
    public func makeSignalPusher(
        transport: any SignalPushTransport = URLSessionSignalPushTransport(), settings: SignalPusher.Settings = SignalPusher.Settings()
    ) -> SignalPusher {
        SignalPusher(pool: pool, issuer: signalIssuer, transport: transport, settings: settings, wakeups: signalWakeups, sealer: secrets?.sealer)
    }

    /// Email codes and magic links; throws `MasterKeyMissing` in a tool started without the
    /// master key. A function value: callers keep it, never the composition.
    public var emailSignIn: @Sendable () throws -> EmailSignInService {
        let made = emailSignInMade
        return { try made.get() }
    }

    /// Recovery codes (issue 46); throws `MasterKeyMissing` without the master key.
    public var recoveryCodes: @Sendable () throws -> RecoveryCodeService {
        let made = recoveryCodesMade
        return { try made.get() }
    }

    /// ID token exchanges (issue 48); throws `MasterKeyMissing` without the master key.
    public var federatedSignIn: @Sendable () throws -> FederatedSignIn {
        guard let federation, let vault, let secrets else { return { throw MasterKeyMissing() } }
        let signIn = FederatedSignIn(
            federation: federation, tokens: tokenService, vault: vault,
            pipeline: SignInPipeline(tokens: tokenService, secondFactor: SecondFactor(secrets: secrets, now: now)), pool: pool, now: now)
        return { signIn }
    }

    /// TOTP enrollment; throws `MasterKeyMissing` without the master key.
    public var totpEnrollment: @Sendable () throws -> TOTPEnrollment {
        let made = totpMade
        return { try made.get() }
    }

    /// The operator console's sign-in and sessions.
    public func console(settings: OperatorConsole.Settings) -> OperatorConsole {
        OperatorConsole(
            settings: settings, emailSignIn: emailSignIn, passkeys: passkeys, clients: clientAuthenticator, tokens: tokenService,
            realms: realmDirectory, families: familyActors, operatorLogs: operatorLogActors, admin: administration, pool: pool, now: now)
    }

    /// The one-time rewrite of events written before personal data was sealed.
    public func legacySealer(addressRetention: TimeInterval, batchSize: Int = 500) -> LegacySealer {
        LegacySealer(
            pool: pool, vault: vault, users: userActors, challenges: challengeActors, notifier: settingsNotifier, now: now,
            addressRetention: addressRetention, batchSize: batchSize)
    }

    /// Sign-in material for `modgud bench load`.
    public func loadFixtures() -> LoadFixtures {
        LoadFixtures(emailSignIn: emailSignIn, challenges: challengeActors, secrets: secrets, now: now)
    }

    /// The mail outbox, to list, open and retry (opening needs the master key).
    public func mailOutbox() throws -> MailOutbox {
        MailOutbox(pool: pool, secrets: try requireSecrets(), vault: vault)
    }

    /// The outbox dispatcher of this instance, woken at once by this instance's requests.
    public func makeMailDispatcher(transport: any MailTransport, settings: MailDispatcher.Settings = MailDispatcher.Settings()) throws
        -> MailDispatcher
    {
        MailDispatcher(
            outbox: MailOutbox(pool: pool, secrets: try requireSecrets(), vault: try requireVault()), transport: transport, settings: settings,
            logger: Logger(label: "modgud.mail"), doorbell: mailDoorbell)
    }

    private func requireVault() throws -> PersonalDataVault {
        guard let vault else { throw MasterKeyMissing() }
        return vault
    }

    private func requireSecrets() throws -> ServerSecrets {
        guard let secrets else { throw MasterKeyMissing() }
        return secrets
    }

    /// What a settings change drops from this instance's caches (`nil`: everything).
    private static func invalidation(realms: RealmDirectory, keys: SigningKeyRing, clients: ClientAuthenticator, vault: PersonalDataVault?)
        -> @Sendable (SettingsChange?) -> Void
    {
        { change in
            switch change {
            case .realm(let id):
                realms.invalidate(realm: id)
                keys.invalidatePublished(realm: id)
            case .client(let realm, let id):
                clients.invalidate(realm: realm, clientID: id)
            case .subject(let subject):
                vault?.forget(subject)
            case nil:
                vault?.forgetAll()
                realms.invalidate(realm: nil)
                keys.invalidatePublished(realm: nil)
                clients.invalidate(realm: "", clientID: nil)
            }
        }
    }
}
