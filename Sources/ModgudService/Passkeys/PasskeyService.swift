import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Passkey sign-in and management (docs/spec.md section 4): ceremonies, the urn:cocoar:passkey
/// grant, enrollment, list and delete. WebAuthn verification is the `WebAuthn` library's;
/// this service decides which challenge, RP-ID, origins and stored credential it checks
/// against, and records the outcome.
public struct PasskeyService: Sendable {
    let pool: PQPool
    /// The `passkeys` read model's queries.
    let passkeyTable: PasskeysTable
    let ceremonyActors: AggregateRegistry<PasskeyCeremony>
    let passkeyActors: AggregateRegistry<Passkey>
    let userActors: AggregateRegistry<User>
    let clients: ClientAuthenticator
    let tokenService: TokenService
    let families: AggregateRegistry<TokenFamily>
    /// Opens the personal claims; nil in tools without the master key.
    let vault: PersonalDataVault?
    let now: @Sendable () -> Date

    init(
        pool: PQPool, ceremonies: AggregateRegistry<PasskeyCeremony>, passkeys: AggregateRegistry<Passkey>, users: AggregateRegistry<User>,
        clients: ClientAuthenticator, tokenService: TokenService, families: AggregateRegistry<TokenFamily>, vault: PersonalDataVault?,
        now: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.passkeyTable = PasskeysTable(pool: pool)
        self.ceremonyActors = ceremonies
        self.passkeyActors = passkeys
        self.userActors = users
        self.clients = clients
        self.tokenService = tokenService
        self.families = families
        self.vault = vault
        self.now = now
    }

    /// Everything after the assertion (issue 68): a passkey asks no second factor.
    var pipeline: SignInPipeline {
        SignInPipeline(tokens: tokenService, secondFactor: nil)
    }

    /// No RP-ID to put passkeys under.
    static let unconfigured = ServiceRefusal(
        .unavailable, "Passkey.Unavailable", "Passkeys are not configured: set the client's RP-ID or the realm's primary domain.")

    /// A begun ceremony: its id and the options for the platform authenticator.
    public struct Begun: Sendable {
        public var ceremonyID: UUID
        public var options: CeremonyOptions
    }

    /// The RP-ID a client's passkeys live under: its own, else the realm's primary domain.
    public static func rpID(client: ClientSettings?, realm: RealmSettings) -> String? {
        if let own = client?.rpID, !own.isEmpty { return own }
        if let primary = realm.primaryDomain, !primary.isEmpty { return primary }
        return nil
    }

    /// Origins accepted for a ceremony under `rpID`: https on the RP-ID and its subdomains,
    /// plus the client's Android origins when the client's passkeys live under that RP-ID.
    static func origins(rpID: String, client: ClientSettings?, realm: RealmSettings) -> OriginPolicy {
        let android = client.flatMap { Self.rpID(client: $0, realm: realm) == rpID ? $0.acceptedAndroidOrigins : nil } ?? []
        return .rpID(rpID, plus: android)
    }

    static let verification = VerificationPolicy(requireUserPresence: true, requireUserVerification: true)
    /// An automatic upgrade's registration (WebAuthn L3 §5.1.3 and §7.1 step 14: with
    /// conditional mediation the authenticator creates the credential without a gesture, so
    /// neither UP nor UV is asserted); only for a conditional ceremony.
    static let upgradeVerification = VerificationPolicy(requireUserPresence: false, requireUserVerification: false)

    // MARK: Helpers

    /// - Parameter attestedKey: the attested instance key of the request that begins it (issue 65).
    func begin(
        realm: String, kind: PasskeyCeremony.Kind, rpID: String, clientID: String?, attestedKey: String? = nil, userID: UUID?, conditional: Bool = false,
        deviceAuthorizationID: UUID? = nil, metadata: EventMetadata
    ) async throws -> (UUID, [UInt8]) {
        let ceremonyID = UUID()
        let challenge = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let time = now()
        _ = try await ceremonyActors.actor(forNew: StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID)).execute(
            .begin(
                PasskeyCeremonyBegun(
                    ceremonyID: ceremonyID, kind: kind, challenge: Base64URL.encode(challenge), rpID: rpID, clientID: clientID, userID: userID,
                    expiresAt: time + PasskeyCeremony.lifetime, conditional: conditional ? true : nil, attestedKey: attestedKey,
                    deviceAuthorizationID: deviceAuthorizationID)), now: time,
            metadata: metadata)
        return (ceremonyID, challenge)
    }

    /// Redeems a ceremony: its begin event, or nil when it is unknown, expired, used, of
    /// another kind, client or user (single use, decided by the stream's version).
    func consumeCeremony(realm: String, ceremonyID: UUID, _ consume: PasskeyCeremony.Command, metadata: EventMetadata) async throws
        -> PasskeyCeremonyBegun?
    {
        do {
            return try await ceremonyActors.actor(for: StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID))
                .execute(consume, now: now(), metadata: metadata).state.begun
        } catch is DomainError {
            return nil
        }
    }

    /// The `passkey.enrolled` event of a verified registration.
    static func enrolled(
        _ verdict: RegistrationVerdict, passkeyID: UUID, userID: UUID, rpID: String, name: PersonalText, clientID: String, at time: Date
    ) -> PasskeyEnrolled {
        PasskeyEnrolled(
            passkeyID: passkeyID, userID: userID, credentialID: Base64URL.encode(verdict.credentialID), rpID: rpID,
            publicKey: Base64URL.encode(verdict.publicKey.encoded), algorithm: Int(verdict.publicKey.algorithm.rawValue), signCount: verdict.signCount,
            aaguid: Base64URL.encode(verdict.aaguid), backupEligible: verdict.backupEligible, backedUp: verdict.backedUp,
            transports: verdict.transports.sorted(), attestationFormat: verdict.attestationFormat, displayName: name, clientID: clientID,
            createdAt: time)
    }

    /// The WebAuthn user handle: the user id's 16 bytes (random, no personal data).
    static func userHandle(_ userID: UUID) -> [UInt8] {
        withUnsafeBytes(of: userID.uuid) { Array($0) }
    }

    static func cleanName(_ name: String?) -> String? {
        guard let trimmed = name?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return String(trimmed.filter { !$0.isNewline }.prefix(100))
    }
}
