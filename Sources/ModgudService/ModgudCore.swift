import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import Logging
import PQ

/// The composition root of one instance (issue 68: it only composes). It stores what the
/// instance shares: the store with its inline projections, the aggregate registries, the caches
/// (realms, clients, signing keys, personal data keys, provider keys), the rate limiter, the
/// drain switch and the wake-ups. The services above them are stateless values composed on
/// demand (`ModgudCore+Services.swift`), so a CLI command builds only the ones it uses. Built
/// once at start-up, where the services are taken from it; no type keeps it
/// (`ArchitectureFitnessTests`).
public struct ModgudCore: Sendable {
    let pool: PQPool
    let store: PostgresEventStore
    let realmActors: AggregateRegistry<Realm>
    let clientActors: AggregateRegistry<Client>
    let userActors: AggregateRegistry<User>
    let familyActors: AggregateRegistry<TokenFamily>
    let challengeActors: AggregateRegistry<EmailChallenge>
    let ceremonyActors: AggregateRegistry<PasskeyCeremony>
    let passkeyActors: AggregateRegistry<Passkey>
    /// First-party `auth_session`s (issue 45).
    let authorizationSessionActors: AggregateRegistry<AuthorizationSession>
    /// Device authorizations (RFC 8628, issue 69).
    let deviceAuthorizationActors: AggregateRegistry<DeviceAuthorization>
    /// Receivers' Shared Signals streams (issue 30).
    let signalStreamActors: AggregateRegistry<SignalStream>
    /// Operators' console actions that change no aggregate of their own (issue 31).
    let operatorLogActors: AggregateRegistry<OperatorLog>
    public let keys: SigningKeyRing
    /// Each realm's audit log key (checkpoints only).
    let auditKeys: AuditLogKeys
    /// DPoP proof checks (RFC 9449); nil in tools started without the master key.
    public let dpop: DPoPVerifier?
    public let clientAuthenticator: ClientAuthenticator
    public let realmDirectory: RealmDirectory
    public let rateLimiter: RateLimiter
    /// Readiness for load balancers (`/health/ready`), and the drain switch.
    public let readiness: ReadinessProbe
    /// The projection rebuilds started on this instance (the operations' state).
    let rebuilds: RebuildRunner
    /// Keys derived from the master key; nil in tools started without one.
    let secrets: ServerSecrets?
    /// Personal data keys (issue 13); nil in tools started without the master key.
    let vault: PersonalDataVault?
    /// The clock every service of this instance reads (tests inject one).
    public let now: @Sendable () -> Date
    let mailDoorbell: Doorbell
    /// Wakes this instance's push loop and long polls when SETs are enqueued.
    let signalWakeups = SignalWakeups()
    /// How a settings change reaches every instance's caches.
    public let settingsNotifier: SettingsNotifier
    /// Attestation-based client authentication (issue 47): the authorization server's checks
    /// and the attester; nil in tools started without the master key.
    public let clientAttestation: ClientAttestationVerifier?
    public let attester: ClientAttester?
    /// ID token exchanges (issue 48), with their provider key caches; nil in tools started
    /// without the master key.
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
        (realmActors, clientActors, userActors, familyActors) = (AggregateRegistry(store: store), AggregateRegistry(store: store), AggregateRegistry(store: store), AggregateRegistry(store: store))
        (challengeActors, ceremonyActors, passkeyActors) = (AggregateRegistry(store: store), AggregateRegistry(store: store), AggregateRegistry(store: store))
        (authorizationSessionActors, deviceAuthorizationActors) = (AggregateRegistry(store: store), AggregateRegistry(store: store))
        (signalStreamActors, operatorLogActors) = (AggregateRegistry(store: store), AggregateRegistry(store: store))
        keys = SigningKeyRing(pool: pool, sealer: try masterKey.map { try KeySealer(masterKey: $0) }, realms: realmActors)
        auditKeys = AuditLogKeys(pool: pool, sealer: try masterKey.map { try KeySealer(masterKey: $0) })
        dpop = masterKey.map { DPoPVerifier(pool: pool, nonces: DPoPNonces(masterKey: $0), clock: now) }
        realmDirectory = RealmDirectory(pool: pool, maxAge: settingsMaxAge)
        clientAuthenticator = ClientAuthenticator(pool: pool, maxAge: settingsMaxAge)
        rateLimiter = RateLimiter(pool: pool, masterKey: masterKey, trips: Self.rateLimitTrips(store: store, vault: vault, pool: pool, now: now), now: now)
        readiness = ReadinessProbe(pool: pool)
        rebuilds = RebuildRunner(pool: pool)
        secrets = try masterKey.map { try ServerSecrets(masterKey: $0) }
        self.now = now
        mailDoorbell = Doorbell()
        settingsNotifier = SettingsNotifier(
            pool: pool, invalidate: Self.invalidation(realms: realmDirectory, keys: keys, clients: clientAuthenticator, vault: vault))
        (clientAttestation, attester, federation) = Self.clientFacing(pool, masterKey, keys, clientAuthenticator, attestationRoots, now)
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
