import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// Recovery codes (issue 46): a person who lost every passkey gets back in with one of ten
/// codes shown once, into a session that can only enroll a passkey and manage sessions.
///
/// - The codes live as slow hashes (`RecoveryCode`) in `recovery_codes`; the user's stream
///   names the current set (`user.recovery_codes_generated`), never a code.
/// - A code is spent in the transaction that appends the session's token family and
///   `user.recovery_code_used`: the database decides which of two redemptions wins
///   (`modgud_spend_recovery_code`), and the loser writes nothing.
/// - Redemption answers alike for an unknown address, an account without codes, a wrong code
///   and a used one (one slow hash each time), and is rate limited per address like codes.
public struct RecoveryCodeService: Sendable {
    let pool: PQPool
    let userActors: AggregateRegistry<User>
    /// Everything after the code (issue 68): a recovery session asks no second factor.
    let pipeline: SignInPipeline
    let limiter: RateLimiter
    let vault: PersonalDataVault
    let secrets: ServerSecrets
    let now: @Sendable () -> Date

    public init(
        pool: PQPool, users: AggregateRegistry<User>, tokenService: TokenService, limiter: RateLimiter, vault: PersonalDataVault,
        secrets: ServerSecrets, now: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.userActors = users
        self.pipeline = SignInPipeline(tokens: tokenService, secondFactor: nil)
        self.limiter = limiter
        self.vault = vault
        self.secrets = secrets
        self.now = now
    }

    /// The one answer to every refused redemption.
    public static let invalid = OAuthError.invalidGrant("Invalid recovery code.")

    /// What a person (or an operator) sees of the codes: never a code.
    public struct Status: Sendable, Equatable {
        public var setID: UUID?
        public var remaining: Int
    }

    /// A new set replacing any earlier one; the codes are returned once, for the person to keep.
    /// - Throws: `ServiceRefusal` conflict `User.CannotSignIn` for an account that cannot sign in.
    public func generate(realm: String, userID: UUID, metadata: EventMetadata) async throws -> [String] {
        let (codes, salt) = RecoveryCode.generateSet()
        let setID = UUID()
        // The rows first: an append that then fails leaves a set no stream names (removed below
        // by the next generation), never a named set without its codes.
        let hashes = try await SlowHashQueue.run { try codes.map { try RecoveryCode.hash($0, salt: salt) } }
        _ = try await pool.query(RecoveryCodesTable.insertSet(realm: realm, userID: userID, setID: setID, salt: salt, hashes: hashes))
        do {
            _ = try await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
                .execute(.generateRecoveryCodes(setID: setID, count: codes.count), now: now(), metadata: metadata)
        } catch let refused as DomainError {
            throw ServiceRefusal(.conflict, refused.code, refused.message)
        }
        try await RecoveryCodesTable.removeSets(realm: realm, userID: userID, except: setID, pool: pool)
        return codes
    }

    /// How many codes of the current set are left.
    public func status(realm: String, userID: UUID) async throws -> Status {
        let user = try await userActors.actor(for: StreamNames.user(realm: realm, userID: userID)).current().state
        return Status(setID: user.recoveryCodeSet, remaining: user.recoveryCodeSet == nil ? 0 : user.recoveryCodesLeft)
    }

    /// The current set stops working (an operator, or the person); false when there was none.
    public func revoke(realm: String, userID: UUID, metadata: EventMetadata) async throws -> Bool {
        let outcome = try await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
            .execute(.revokeRecoveryCodes, now: now(), metadata: metadata)
        try await RecoveryCodesTable.removeSets(realm: realm, userID: userID, except: nil, pool: pool)
        return !outcome.events.isEmpty
    }

    /// grant_type=urn:modgud:recovery-code: the address and one code give a recovery session
    /// (`TokenService.prepareRecoverySession`). Every refusal is `invalid`.
    /// - Parameter source: the request's source key (`recovery-code.ip`).
    public func redeem(email rawEmail: String, code: String, _ grant: UserGrantRequest, source: String, settings: RealmSettings) async throws
        -> TokenResponse
    {
        let realm = grant.client.realm
        let address = EmailAddress(rawEmail)
        let mailbox = address?.value ?? rawEmail.lowercased()
        try await limiter.check(
            [
                RateLimitBucket(.recoveryPerIP, key: source),
                RateLimitBucket(.recoveryPerMailbox, key: secrets.codes.hash("recovery-code", for: mailbox), mailbox: address?.value),
            ], realm: realm, settings: settings)
        let found = try await candidate(address, realm: realm)
        // One slow hash whatever was found, so the time taken tells nothing either.
        let salt = found?.salt ?? Self.decoySalt
        let hash = try await SlowHashQueue.run { try RecoveryCode.hash(code, salt: salt) }
        guard let found, RecoveryCode.normalize(code) != nil,
            // A wrong code costs no token minting and no transaction (the spend below decides).
            try await RecoveryCodesTable.isUnused(realm: realm, userID: found.userID, setID: found.setID, hash: hash, pool: pool)
        else { throw Self.invalid }
        // The account as the candidate's lookup found it (its version matters to no write here:
        // the spend below is the user's own command).
        let session = try await pipeline.prepareOpen(.recoveryCode, try pipeline.gate(.recoveryCode, user: found.user, version: 0, grant: grant), grant)
        let spend = RecoveryCodesTable.spend(realm: realm, userID: found.userID, setID: found.setID, hash: hash, at: now())
        do {
            _ = try await found.actor.execute(
                .useRecoveryCode(setID: found.setID), now: now(), metadata: grant.metadata, extra: { _ in [spend] },
                alsoAppending: { _ in [try session.write()] })
        } catch let failure as PQError where failure.sqlState == RecoveryCodesTable.noSuchCodeState {
            throw Self.invalid
        } catch is DomainError {
            throw Self.invalid
        }
        return session.response
    }

    /// What a redemption needs of the address's account: its current set and that set's salt.
    private struct Candidate {
        var userID: UUID
        var user: User.State
        var actor: AggregateActor<User>
        var setID: UUID
        var salt: [UInt8]
    }

    private func candidate(_ address: EmailAddress?, realm: String) async throws -> Candidate? {
        guard let address,
            let userID = try await UsersTable.userID(realm: realm, email: address, index: vault.blindIndex(address.value, realm: realm), pool: pool)
        else { return nil }
        let actor = await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
        let user = try await actor.current().state
        guard user.canSignIn, let setID = user.recoveryCodeSet,
            let salt = try await RecoveryCodesTable.salt(realm: realm, userID: userID, setID: setID, pool: pool)
        else { return nil }
        return Candidate(userID: userID, user: user, actor: actor, setID: setID, salt: salt)
    }

    /// The salt an attempt without a set hashes under (its result matches nothing).
    static let decoySalt = [UInt8](repeating: 0x5a, count: 16)
}
