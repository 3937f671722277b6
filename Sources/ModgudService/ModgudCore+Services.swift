import EventSourcing
import Foundation
import Logging
import ModgudDomain
import PQ

/// The services of one instance, composed on demand from what the composition stores (issue
/// 68, item 5): each is a stateless value over the shared registries and caches, so building
/// one is cheap and a CLI command builds only those it uses. Those that need the master key
/// are function values that throw `MasterKeyMissing` in a tool started without it.
extension ModgudCore {
    /// Minting and refresh.
    public var tokenService: TokenService {
        TokenService(
            pool: pool, families: familyActors, users: userActors, minter: TokenMinter(keys: keys), realms: realmDirectory, vault: vault, now: now)
    }

    /// RFC 7662 introspection and the protected endpoints' bearer lookups.
    public var tokenIntrospection: TokenIntrospection {
        TokenIntrospection(families: familyActors, tokens: TokenTables(pool: pool), keys: keys, now: now)
    }

    /// RFC 7009 revocation, a reused code's family, a person's own sessions.
    public var tokenRevocation: TokenRevocation {
        TokenRevocation(families: familyActors, tokens: TokenTables(pool: pool), introspection: tokenIntrospection, deviceSessions: nativeSSO, now: now)
    }

    /// grant_type=client_credentials.
    public var clientCredentials: ClientCredentialsService {
        ClientCredentialsService(families: familyActors, minter: TokenMinter(keys: keys), realms: realmDirectory, now: now)
    }

    /// OpenID Connect Native SSO (issue 69): a teammate app's sign-in, and the device's sign-out.
    public var nativeSSO: NativeSSOService {
        NativeSSOService(
            tokenService: tokenService, families: familyActors, users: userActors, tokens: TokenTables(pool: pool), keys: keys, realms: realmDirectory,
            now: now)
    }

    /// Passkey ceremonies, the passkey grant and passkey management.
    public var passkeys: PasskeyService {
        PasskeyService(
            pool: pool, ceremonies: ceremonyActors, passkeys: passkeyActors, users: userActors, clients: clientAuthenticator, tokenService: tokenService,
            families: familyActors, vault: vault, now: now)
    }

    /// Email codes and magic links.
    public var emailSignIn: @Sendable () throws -> EmailSignInService {
        withMasterKey { secrets, vault in
            EmailSignInService(
                pool: pool, challenges: challengeActors, users: userActors, passkeys: passkeyActors, secrets: secrets, vault: vault, limiter: rateLimiter,
                tokenService: tokenService, mailEnqueued: { [doorbell = mailDoorbell] in doorbell.ring() }, now: now)
        }
    }

    /// Recovery codes (issue 46).
    public var recoveryCodes: @Sendable () throws -> RecoveryCodeService {
        withMasterKey { secrets, vault in
            RecoveryCodeService(pool: pool, users: userActors, tokenService: tokenService, limiter: rateLimiter, vault: vault, secrets: secrets, now: now)
        }
    }

    /// TOTP enrollment.
    public var totpEnrollment: @Sendable () throws -> TOTPEnrollment {
        withMasterKey { secrets, vault in TOTPEnrollment(users: userActors, secrets: secrets, vault: vault, now: now) }
    }

    /// ID token exchanges (issue 48).
    public var federatedSignIn: @Sendable () throws -> FederatedSignIn {
        guard let federation else { return { throw MasterKeyMissing() } }
        return withMasterKey { secrets, vault in
            FederatedSignIn(
                federation: federation, users: userActors, families: familyActors, vault: vault,
                pipeline: SignInPipeline(tokens: tokenService, secondFactor: SecondFactor(secrets: secrets, now: now)), pool: pool, now: now)
        }
    }

    /// The device authorization grant (RFC 8628, issue 69): user codes are hashed under a key
    /// derived from the master key.
    public var deviceAuthorizations: @Sendable () throws -> DeviceAuthorizationService {
        withMasterKey { secrets, _ in
            DeviceAuthorizationService(
                pool: pool, authorizations: deviceAuthorizationActors, tokens: tokenService, users: userActors, passkeys: passkeys,
                userCodeKey: secrets.userCodes, now: now)
        }
    }

    /// The Authorization Challenge Endpoint's sessions and codes (issue 45).
    public var firstParty: FirstPartyAuthorization {
        FirstPartyAuthorization(pool: pool, sessions: authorizationSessionActors, now: now)
    }

    /// Readiness, projections and their rebuilds, the outboxes' dead letters (the console's).
    public var operations: OperationsService {
        OperationsService(pool: pool, readiness: readiness, rebuilds: rebuilds, secrets: secrets, vault: vault)
    }

    /// Erasure of a person (GDPR Article 17).
    public var eraser: UserEraser {
        UserEraser(
            users: userActors, familyActors: familyActors, tokenTables: TokenTables(pool: pool), passkeys: passkeys, vault: vault, pool: pool, store: store,
            notifier: settingsNotifier, now: now)
    }

    /// Realm, client and user administration and the audit queries (CLI, admin API, console).
    public var administration: Administration {
        let (passkeys, tables, sealer) = (passkeys, TokenTables(pool: pool), secrets?.sealer)
        return Administration(
            realms: RealmAdministration(realms: realmActors, keys: keys, passkeys: passkeys, pool: pool, notifier: settingsNotifier, sealer: sealer, now: now),
            clients: ClientAdministration(
                clients: clientActors, realms: realmActors, passkeys: passkeys, pool: pool, notifier: settingsNotifier, sealer: sealer, now: now),
            users: UserAdministration(
                users: userActors, realms: realmActors, families: familyActors, tokenTables: tables, passkeyService: passkeys, vault: vault, pool: pool,
                eraser: eraser, totp: totpEnrollment, recoveryCodes: recoveryCodes, now: now),
            audit: AuditQueries(pool: pool, tokenTables: tables, users: userActors, vault: vault, auditKeys: auditKeys), clock: now)
    }

    /// The operator console's sign-in and sessions.
    public func console(settings: OperatorConsole.Settings) -> OperatorConsole {
        OperatorConsole(
            settings: settings, emailSignIn: emailSignIn, passkeys: passkeys, clients: clientAuthenticator, introspection: tokenIntrospection,
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

    /// Sessions aged by many rotations, for `modgud bench scale`.
    public func sessionHistory() -> SessionHistory {
        SessionHistory(pool: pool, store: store, families: familyActors, now: now)
    }

    /// The mail outbox, to list, open and retry (opening needs the master key).
    public func mailOutbox() throws -> MailOutbox {
        try withMasterKey { secrets, vault in MailOutbox(pool: pool, secrets: secrets, vault: vault) }()
    }

    /// The outbox dispatcher of this instance, woken at once by this instance's requests.
    public func makeMailDispatcher(transport: any MailTransport, settings: MailDispatcher.Settings = MailDispatcher.Settings()) throws
        -> MailDispatcher
    {
        MailDispatcher(
            outbox: try mailOutbox(), transport: transport, settings: settings, logger: Logger(label: "modgud.mail"), doorbell: mailDoorbell)
    }

    /// A service that needs the master key's parts, built now; the function value hands it out
    /// (callers keep it, never the composition), or throws `MasterKeyMissing` in a tool started
    /// without the master key.
    private func withMasterKey<T: Sendable>(_ make: (ServerSecrets, PersonalDataVault) -> T) -> @Sendable () throws -> T {
        guard let secrets, let vault else { return { throw MasterKeyMissing() } }
        let made = make(secrets, vault)
        return { made }
    }
}
