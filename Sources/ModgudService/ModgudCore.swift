import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import Logging
import PQ

/// The composition root of one instance: the store with its inline projections, the
/// aggregate registries and the services above them. Built once at start-up.
public struct ModgudCore: Sendable {
    public let pool: PQPool
    public let store: PostgresEventStore
    public let realmActors: AggregateRegistry<Realm>
    public let clientActors: AggregateRegistry<Client>
    public let userActors: AggregateRegistry<User>
    public let familyActors: AggregateRegistry<TokenFamily>
    public let keys: SigningKeyRing
    /// Each realm's audit log key (checkpoints only).
    public let auditKeys: AuditLogKeys
    /// DPoP proof checks (RFC 9449); nil in tools started without the master key.
    public let dpop: DPoPVerifier?
    public let tokenService: TokenService
    public let clientAuthenticator: ClientAuthenticator
    public let realmDirectory: RealmDirectory
    public let challengeActors: AggregateRegistry<EmailChallenge>
    public let ceremonyActors: AggregateRegistry<PasskeyCeremony>
    public let passkeyActors: AggregateRegistry<Passkey>
    /// Passkey ceremonies, the passkey grant and passkey management.
    public let passkeys: PasskeyService
    public let rateLimiter: RateLimiter
    /// Readiness for load balancers (`/health/ready`), and the drain switch.
    public let readiness: ReadinessProbe
    /// Keys derived from the master key; nil in tools started without one.
    public let secrets: ServerSecrets?
    /// Personal data keys (issue 13); nil in tools started without the master key.
    public let vault: PersonalDataVault?
    /// The clock every service of this instance reads (tests inject one).
    public let now: @Sendable () -> Date
    private let mailDoorbell = Doorbell()
    /// Receivers' Shared Signals streams (issue 30).
    public let signalStreamActors: AggregateRegistry<SignalStream>
    /// Operators' console actions that change no aggregate of their own (issue 31).
    public let operatorLogActors: AggregateRegistry<OperatorLog>
    /// Wakes this instance's push loop and long polls when SETs are enqueued.
    public let signalWakeups = SignalWakeups()
    /// Readiness, projections and their rebuilds, the outboxes' dead letters (the console's).
    public let operations: OperationsService

    /// - Parameters:
    ///   - masterKey: 32 bytes sealing the realms' private signing keys (nil: a tool that never signs).
    ///   - now: the clock (tests inject one).
    ///   - settingsMaxAge: how long realm and client settings are held per instance without a
    ///     notification (the backstop for a lost NOTIFY; tests lengthen it to prove NOTIFY alone).
    ///   - groupCommit: how concurrent appends share commits; nil commits each alone.
    public init(
        pool: PQPool, masterKey: [UInt8]?, now: @escaping @Sendable () -> Date = { Date() }, settingsMaxAge: Duration = .seconds(5),
        groupCommit: AppendBatcher.Options? = AppendBatcher.Options()
    ) throws {
        self.pool = pool
        let vault = try masterKey.map { try PersonalDataVault(pool: pool, masterKey: $0) }
        self.vault = vault
        var sealer: (@Sendable (EventMetadata) async throws -> EventMetadata)?
        if let vault {
            sealer = { metadata in try await vault.sealingAddress(metadata, at: now()) }
        }
        store = PostgresEventStore(
            pool: pool, inlineProjections: ProjectionCatalog.identity, metadataSealer: sealer, groupCommit: groupCommit)
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
        passkeys = PasskeyService(
            pool: pool, ceremonies: ceremonyActors, passkeys: passkeyActors, users: userActors, clients: clientAuthenticator, tokenService: tokenService,
            now: now)
        rateLimiter = RateLimiter(pool: pool, masterKey: masterKey, now: now)
        readiness = ReadinessProbe(pool: pool)
        secrets = try masterKey.map { try ServerSecrets(masterKey: $0) }
        signalStreamActors = AggregateRegistry(store: store)
        operatorLogActors = AggregateRegistry(store: store)
        operations = OperationsService(pool: pool, readiness: readiness, secrets: secrets, vault: vault)
        self.now = now
    }

    /// Signs SETs at delivery (push and poll alike).
    var signalIssuer: SignalSETIssuer {
        SignalSETIssuer(keys: keys, users: userActors, vault: vault, clients: clientAuthenticator)
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

    /// Rings this instance's SET wakeups whenever another instance enqueues (NOTIFY
    /// `modgud_ssf`), and at least every second, until cancelled.
    public func relaySignalNotifications() async {
        let listener = NotificationListener(configuration: pool.configuration, channel: SignalTables.channel)
        while !Task.isCancelled {
            await listener.wait(timeout: .seconds(1))
            signalWakeups.ring()
        }
        await listener.close()
    }

    /// This instance's push deliverer.
    public func makeSignalPusher(
        transport: any SignalPushTransport = URLSessionSignalPushTransport(), settings: SignalPusher.Settings = SignalPusher.Settings()
    ) -> SignalPusher {
        SignalPusher(pool: pool, issuer: signalIssuer, transport: transport, settings: settings, wakeups: signalWakeups, sealer: secrets?.sealer)
    }

    /// Email codes and magic links. Needs the master key.
    public func emailSignIn() throws -> EmailSignInService {
        let doorbell = mailDoorbell
        return EmailSignInService(
            pool: pool, challenges: challengeActors, users: userActors, passkeys: passkeyActors, secrets: try requireSecrets(), vault: try requireVault(), limiter: rateLimiter,
            tokenService: tokenService,
            mailEnqueued: { doorbell.ring() }, now: now)
    }

    /// TOTP enrollment. Needs the master key.
    public func totpEnrollment() throws -> TOTPEnrollment {
        TOTPEnrollment(users: userActors, secrets: try requireSecrets(), vault: vault, now: now)
    }

    /// The outbox dispatcher of this instance, woken at once by this instance's requests.
    public func makeMailDispatcher(transport: any MailTransport, settings: MailDispatcher.Settings = MailDispatcher.Settings()) throws
        -> MailDispatcher
    {
        MailDispatcher(
            outbox: MailOutbox(pool: pool, secrets: try requireSecrets(), vault: try requireVault()), transport: transport, settings: settings,
            logger: Logger(label: "modgud.mail"), doorbell: mailDoorbell)
    }

    func requireVault() throws -> PersonalDataVault {
        guard let vault else { throw MasterKeyMissing() }
        return vault
    }

    private func requireSecrets() throws -> ServerSecrets {
        guard let secrets else { throw MasterKeyMissing() }
        return secrets
    }

    /// Drops cached settings after a change (`nil`: everything).
    public func invalidateSettings(_ change: SettingsChange?) {
        switch change {
        case .realm(let id):
            realmDirectory.invalidate(realm: id)
            keys.invalidatePublished(realm: id)
        case .client(let realm, let id):
            clientAuthenticator.invalidate(realm: realm, clientID: id)
        case .subject(let subject):
            vault?.forget(subject)
        case nil:
            vault?.forgetAll()
            realmDirectory.invalidate(realm: nil)
            keys.invalidatePublished(realm: nil)
            clientAuthenticator.invalidate(realm: "", clientID: nil)
        }
    }

    /// After a committed change: drops this instance's copy at once, tells the other instances
    /// (`SettingsChangeListener`), and returns once every serving instance has applied it (or
    /// after the caches' age limit, 5 s), so that the change holds for the next request
    /// everywhere once the caller answers.
    public func settingsChanged(_ change: SettingsChange) async {
        invalidateSettings(change)
        await SettingsChangeListener.announce(change, pool: pool)
    }

    /// What a host serves in its app-association files (passkey and magic-link apps).
    public func appAssociations(realm: RealmDirectory.Entry, host: String) async throws -> AppAssociations.HostApps {
        try await AppAssociations.apps(realm: realm, host: host, pool: pool)
    }

    /// The state of a user, for userinfo and sign-in.
    public func user(realm: String, id: UUID) async throws -> User.State {
        try await userActors.actor(for: StreamNames.user(realm: realm, userID: id)).current().state
    }
}
