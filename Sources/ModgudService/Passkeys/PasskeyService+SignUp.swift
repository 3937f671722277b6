import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Passkey sign-up (issue 14): an account whose first factor is a passkey.
///
/// 1. `beginSignUp` answers creation options for a future user, the same for every address (no
///    lookup happens). The address and names are sealed under that user's new data key; the
///    key is stored in the ceremony's transaction.
/// 2. `redeemSignUp` (the token endpoint, `urn:cocoar:passkey` with `attestation`, or Auth0's
///    `urn:okta:params:oauth:grant-type:webauthn`) consumes the ceremony, verifies the
///    attestation, and creates the user, its passkey and its token family in one transaction.
///    The unique address index decides races: two sign-ups of one address make one account.
///
/// The address stays unconfirmed until a code proves it (`EmailConfirmation`). Until then,
/// proof of the mailbox wins: a registration code for the address retires the account.
extension PasskeyService {
    /// What an app submits to begin a sign-up.
    public struct SignUpRequest: Sendable {
        public var email: String
        public var firstName: String?
        public var lastName: String?
        /// What the authenticator shows as the account's name (default: the names, else the
        /// address). Not stored.
        public var displayName: String?

        public init(email: String, firstName: String? = nil, lastName: String? = nil, displayName: String? = nil) {
            self.email = email
            self.firstName = firstName
            self.lastName = lastName
            self.displayName = displayName
        }
    }

    /// Who may sign up: the client's permission, then the realm's registration posture.
    /// - Throws: `ServiceRefusal` (forbidden) `Passkey.SignUpNotAllowed` or `Passkey.SignUpDisabled`.
    static func checkSignUpAllowed(client: ClientSettings, realm: RealmSettings) throws {
        guard client.passkeySignUp, client.grants.contains(.passkey) else {
            throw ServiceRefusal.forbidden("Passkey.SignUpNotAllowed", "This client may not create accounts with a passkey.")
        }
        guard realm.registrationPosture != .off else {
            throw ServiceRefusal.forbidden("Passkey.SignUpDisabled", "Self-registration is off in this realm.")
        }
    }

    /// POST /connect/passkey/register/begin (and Auth0's POST /passkey/register), bound to
    /// `binding` (issue 65): the client the request named and its attested instance; only they
    /// can redeem it.
    /// - Throws: `ServiceRefusal` (invalid) for an unknown client (or none), an address that is
    ///   not one, or a required name missing; 403 when sign-up is not allowed; 503 without an RP-ID.
    public func beginSignUp(realm: RealmDirectory.Entry, binding: FlowBinding, _ request: SignUpRequest, metadata: EventMetadata) async throws
        -> Begun
    {
        guard let clientID = binding.clientID, let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID) else {
            throw ServiceRefusal.invalid("Passkey.UnknownClient", "Unknown client_id.")
        }
        try Self.checkSignUpAllowed(client: client, realm: realm.settings)
        let fields = realm.settings.registrationFields
        for (requirement, value, label) in [(fields.firstname, request.firstName, "Firstname"), (fields.lastname, request.lastName, "Lastname")]
        where requirement == .required && User.cleanName(value) == nil {
            throw ServiceRefusal.invalid("Passkey.FieldRequired", "\(label) is required.")
        }
        guard let email = EmailAddress(request.email) else { throw ServiceRefusal.invalid("Passkey.InvalidEmail", "Email is not an address.") }
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        guard let vault else { throw Self.unconfigured }
        let firstName = fields.firstname == .off ? nil : User.cleanName(request.firstName)
        let lastName = fields.lastname == .off ? nil : User.cleanName(request.lastName)
        // The future user's key, with the address's blind index beside it (the users
        // projection copies the index when the account is created).
        let registrant = UUID()
        let key = try vault.newSubject(
            PersonalDataVault.userSubject(registrant), realm: realm.realmID, emailIndex: vault.blindIndex(email.value, realm: realm.realmID))
        let challenge = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let time = now()
        let begun = PasskeyCeremonyBegun(
            ceremonyID: UUID(), kind: .signUp, challenge: Base64URL.encode(challenge), rpID: rpID, clientID: clientID, userID: nil,
            expiresAt: time + PasskeyCeremony.lifetime, registrantID: registrant, email: .sealed(try key.seal(email.value)),
            firstName: try key.seal(firstName), lastName: try key.seal(lastName), attestedKey: binding.attestedKey)
        let insert = key.insert
        _ = try await ceremonyActors.actor(forNew: StreamNames.passkeyCeremony(realm: realm.realmID, ceremonyID: begun.ceremonyID))
            .execute(.begin(begun), now: time, metadata: metadata, extra: { _ in [insert] })
        let names = [firstName, lastName].compactMap { $0 }.joined(separator: " ")
        let displayName = Self.cleanName(request.displayName) ?? (names.isEmpty ? email.value : names)
        return Begun(
            ceremonyID: begun.ceremonyID,
            options: .creation(
                challenge: challenge, rpID: rpID, rpName: realm.settings.displayName, userHandle: Base64URL.encode(Self.userHandle(registrant)),
                userName: email.value, userDisplayName: displayName, exclude: [], timeout: PasskeyCeremony.lifetime))
    }

    /// What the token endpoint answers when the address has an account (docs/spec.md's passkey
    /// sign-up errors): the app should run the login flow instead.
    /// The one text of every refused passkey redemption, sign-in and sign-up alike (seed 001's
    /// error table: a uniform `invalid_grant`, whatever part was wrong). Only `accountExists`
    /// says more: a sign-up for a taken address tells its owner to sign in.
    public static let refused = OAuthError.invalidGrant("Invalid or expired passkey assertion.")

    public static let accountExists = OAuthError.invalidGrant("An account with this email address exists. Sign in instead.")

    /// The sign-up redemption. Every failure is `invalid_grant` (the HTTP layer adds the
    /// jitter), `accountExists` included; `unauthorized_client` when sign-up is not allowed.
    ///
    /// A sign-up's first statement is no read, so the request's checks go alone, first; then
    /// `perSource`, the passkey limit per source (its answer may tell that an address has an
    /// account), each throwing `RateLimited` when over.
    public func redeemSignUp(
        client: AuthenticatedClient, ceremonyID rawCeremonyID: String, attestation: [UInt8], _ grant: UserGrantRequest,
        perSource: RateLimitCheck? = nil
    ) async throws -> TokenResponse {
        try await grant.checks.send(on: pool)
        try await perSource?.run(on: pool)
        let badCeremony = Self.refused
        let failed = Self.refused
        let realm = client.realm
        try SignInPipeline.checkRequest(grant)
        let realmSettings = try await tokenService.realmSettings(realm)
        do {
            try Self.checkSignUpAllowed(client: client.settings, realm: realmSettings)
        } catch let refusal as ServiceRefusal {
            throw OAuthError.unauthorizedClient(refusal.message)
        }
        guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw badCeremony }
        // Single use, decided by the store, before anything else is looked at: of twenty
        // concurrent redemptions, one gets past this line.
        guard
            let ceremony = try await consumeCeremony(
                realm: realm, ceremonyID: ceremonyID, .consume(kind: .signUp, by: client.presenter, userID: nil), metadata: grant.metadata),
            let registrant = ceremony.registrantID, let sealedEmail = ceremony.email, let challenge = Base64URL.decode(ceremony.challenge)
        else { throw badCeremony }
        let verdict: RegistrationVerdict
        do {
            verdict = try await RegistrationVerifier().verify(
                try RegistrationCredential(json: attestation), expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client.settings, realm: realmSettings), policy: Self.verification)
        } catch {
            throw failed
        }
        // Only now, after a whole authenticator ceremony, may the answer tell that the address
        // has an account. The unique index below decides a race between sign-ups; this lookup
        // also finds accounts projected before sealing (`plain:` keys, which that index cannot
        // compare) and spares minting tokens that could not commit.
        guard let vault, let address = try await vault.open(sealedEmail).flatMap(EmailAddress.init) else {
            throw badCeremony  // the address was erased while the ceremony was out
        }
        if try await UsersTable.userID(realm: realm, email: address, index: vault.blindIndex(address.value, realm: realm), pool: pool) != nil {
            throw Self.accountExists
        }
        let registered = UserRegistered(
            userID: registrant, email: sealedEmail, emailConfirmed: false, username: nil, firstName: ceremony.firstName,
            lastName: ceremony.lastName, securityStamp: OpaqueToken.generate().hash, via: User.passkeySignUpVia)
        let name = try await sealName("Passkey", userID: registrant, realm: realm)
        let enrolled = Self.enrolled(verdict, passkeyID: UUID(), userID: registrant, rpID: ceremony.rpID, name: name, clientID: client.id, at: now())
        do {
            return try await commitSignUp(registered, enrolled: enrolled, client: client, grant)
        } catch let failure as PQError where failure.meansSubjectKeyMissing {
            throw badCeremony  // the address was erased while the ceremony was out
        }
    }

    /// The new user, the passkey and the sign-in's token family in one multi-stream append.
    /// The registrant's key must still exist when the user commits: checked in the
    /// transaction, by the database (`modgud_require_subject_key`).
    private func commitSignUp(_ registered: UserRegistered, enrolled: PasskeyEnrolled, client: AuthenticatedClient, _ grant: UserGrantRequest)
        async throws -> TokenResponse
    {
        let realm = client.realm
        // User verification was required: the passkey is two factors in one (RFC 8176 "mfa").
        let signIn = try await pipeline.prepareOpen(.passkey(backupEligible: enrolled.backupEligible), .registering(registered), grant)
        let keyCheck = SubjectKeysTable.requireKey(subject: PersonalDataVault.userSubject(registered.userID))
        let registrant = registered.userID
        do {
            _ = try await userActors.actor(forNew: StreamNames.user(realm: realm, userID: registrant)).execute(
                .register(
                    id: registrant, email: registered.email, emailConfirmed: registered.emailConfirmed, username: nil, firstName: registered.firstName,
                    lastName: registered.lastName, securityStamp: registered.securityStamp, via: registered.via), now: enrolled.createdAt,
                metadata: grant.metadata, extra: { _ in [keyCheck] },
                alsoAppending: { _ in
                    [
                        StreamWrite(
                            stream: StreamNames.passkey(realm: realm, passkeyID: enrolled.passkeyID), expected: .noStream,
                            events: [try PasskeyEvent.enrolled(enrolled).newEvent()]),
                        try signIn.write(),
                    ]
                })
        } catch let taken where UsersTable.isAddressTaken(taken) {
            // The unique address index: another sign-up or a registration won the race.
            // Nothing was written.
            throw Self.accountExists
        } catch let taken where PasskeysTable.isCredentialTaken(taken) {
            // The credential is registered already (the authenticator reused a credential id).
            throw Self.refused
        }
        return signIn.response
    }
}
