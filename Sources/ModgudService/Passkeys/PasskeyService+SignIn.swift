import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Usernameless passkey sign-in (docs/spec.md section 4).
extension PasskeyService {

    /// POST /connect/passkey/begin: a usernameless login ceremony (empty allowCredentials),
    /// bound to `binding` (issue 65): the client the request named, if any, whose RP-ID it uses,
    /// and its attested instance; only they can redeem it.
    /// - Throws: `ServiceRefusal` (invalid) for an unknown client, 503 without an RP-ID.
    public func beginLogin(realm: RealmDirectory.Entry, binding: FlowBinding, metadata: EventMetadata) async throws -> Begun {
        let clientID = binding.clientID
        var client: ClientSettings?
        if let clientID {
            guard let found = try await clients.enabledClient(realm: realm.realmID, clientID: clientID) else {
                throw ServiceRefusal.invalid("Passkey.UnknownClient", "Unknown client_id.")
            }
            client = found
        }
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .login, rpID: rpID, clientID: clientID, attestedKey: binding.attestedKey, userID: nil, metadata: metadata)
        return Begun(ceremonyID: ceremonyID, options: .request(challenge: challenge, rpID: rpID, timeout: PasskeyCeremony.lifetime))
    }

    /// grant_type=urn:cocoar:passkey. Every failure is `invalid_grant` with one text
    /// (`refused`, seed 001's error table: "don't parse it for which part was wrong"); the HTTP
    /// layer adds the jitter.
    ///
    /// One commit per sign-in (issue 49): the ceremony is consumed in the append that records
    /// the use and starts the token family, at the version this instance found it live, so the
    /// store decides single use; a refused assertion consumes it on its own before the refusal
    /// is answered or recorded, so a failed verification cannot be retried either.
    public func redeem(client: AuthenticatedClient, ceremonyID rawCeremonyID: String, assertion: String, _ grant: UserGrantRequest)
        async throws -> TokenResponse
    {
        let realm = client.realm
        let ceremonyID = try await parsedCeremony(rawCeremonyID, client: client, grant)
        let credential = try? AssertionCredential(json: Array(assertion.utf8))
        let rawID = credential.flatMap { Base64URL.decode($0.rawId) }
        // The credential's lookup carries the request's count and proof claim (issue 49).
        let found = try await lookUpCredential(rawID, realm: realm, checks: grant.checks)
        let ceremony = try await liveCeremony(realm: realm, ceremonyID: ceremonyID, client: client)
        let checked: CheckedAssertion
        switch try await check(credential, rawID: rawID, found: found, ceremony: ceremony.begun, realm: realm, client: client.settings) {
        case .refused(let refusal, let report):
            guard try await spend(ceremony, client: client, grant) else { throw Self.refused }
            if let report { await file(report, grant) }
            throw refusal
        case .verified(let verified):
            checked = verified
        }
        let loaded = try await userActors.actor(for: StreamNames.user(realm: realm, userID: checked.enrolled.userID))
            .current(atLeast: checked.userVersion)
        // User verification was required: the passkey is two factors in one (RFC 8176 "mfa";
        // `SignInFactor.passkey`). The tokens are minted first; their family commits with the
        // recorded use.
        let factor = SignInFactor.passkey(backupEligible: checked.enrolled.backupEligible)
        let signIn = try await pipeline.prepare(factor, try pipeline.gate(factor, user: loaded.state, version: loaded.version, grant: grant), grant)
        try await recordUse(
            checked, consuming: ceremony, also: try signIn?.write(), realm: realm, consume: Self.consumeLogin(client), metadata: grant.metadata)
        guard let signIn else { throw Self.refused }
        return signIn.response
    }

    /// A login ceremony this instance finds live, and the version it found it at.
    struct LiveCeremony: Sendable {
        let stream: StreamRef
        let begun: PasskeyCeremonyBegun
        let version: Int64
    }

    /// The ceremony as cached (read when this instance has not seen it begin). A refusal here
    /// is final: a consumed, expired or mismatched ceremony stays so. Only "live" can be stale
    /// (consumed elsewhere since), and the append that consumes it catches that.
    private func liveCeremony(realm: String, ceremonyID: UUID, client: AuthenticatedClient) async throws -> LiveCeremony {
        let stream = StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID)
        let (state, version) = try await ceremonyActors.actor(for: stream).current(atLeast: 1)
        guard let begun = state.begun, (try? PasskeyCeremony.decide(Self.consumeLogin(client), state: state, now: now())) != nil else {
            throw Self.refused
        }
        return LiveCeremony(stream: stream, begun: begun, version: version)
    }

    private static func consumeLogin(_ client: AuthenticatedClient) -> PasskeyCeremony.Command {
        .consume(kind: .login, by: client.presenter, userID: nil)
    }

    /// Consumes the ceremony on its own (a refused assertion); false when it was spent meanwhile.
    private func spend(_ ceremony: LiveCeremony, client: AuthenticatedClient, _ grant: UserGrantRequest) async throws -> Bool {
        try await consumeCeremony(realm: client.realm, ceremonyID: ceremony.begun.ceremonyID, Self.consumeLogin(client), metadata: grant.metadata) != nil
    }

    /// Records the use, the ceremony's consumption and the sign-in's token family in one append.
    /// A ceremony consumed meanwhile refuses the whole of it; a passkey deleted meanwhile still
    /// spends the ceremony; a concurrent use with a higher count leaves this one a suspected clone.
    /// `also` is what the assertion was for (a sign-in's family, a device's approval): it
    /// commits with the use, or not at all; a conflict on it is thrown as is.
    func recordUse(
        _ checked: CheckedAssertion, consuming ceremony: LiveCeremony, also write: StreamWrite?, realm: String, consume: PasskeyCeremony.Command,
        metadata: EventMetadata
    ) async throws {
        let consumed = StreamWrite(
            stream: ceremony.stream, expected: ExpectedVersion(current: ceremony.version),
            events: [try PasskeyCeremonyEvent.consumed(PasskeyCeremonyConsumed(ceremonyID: ceremony.begun.ceremonyID)).newEvent()])
        let used: CommandOutcome<Passkey>
        do {
            used = try await checked.passkey.execute(
                .recordUse(signCount: checked.verdict.newSignCount, backedUp: checked.verdict.backedUp, at: now()), now: now(), metadata: metadata,
                alsoAppending: { events in
                    guard let write, case .used = events.first else { return [consumed] }
                    return [consumed, write]
                })
        } catch EventStoreError.wrongExpectedVersion(let conflicted, _, _) where conflicted == ceremony.stream.id {
            throw Self.refused
        } catch is DomainError {
            _ = try await consumeCeremony(realm: realm, ceremonyID: ceremony.begun.ceremonyID, consume, metadata: metadata)
            throw Self.refused
        }
        await ceremonyActors.forget(ceremony.stream.id)
        guard case .used = used.events.first else { throw Self.refused }
    }

    /// The ceremony's id, once the scopes and audiences asked for are the client's; a refusal
    /// here is counted (the grant's checks had not been sent yet).
    private func parsedCeremony(_ rawCeremonyID: String, client: AuthenticatedClient, _ grant: UserGrantRequest) async throws -> UUID {
        try await grant.checks.countingRefusals(on: pool) {
            try SignInPipeline.checkRequest(grant)
            guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw Self.refused }
            return ceremonyID
        }
    }

    /// The presented credential's row, looked up with the request's checks; without a
    /// readable credential id, only the count is sent (the request fails anyway).
    func lookUpCredential(_ rawID: [UInt8]?, realm: String, checks: GrantChecks) async throws
        -> (passkeyID: UUID, passkeyVersion: Int64, userVersion: Int64)?
    {
        guard let rawID else {
            try await checks.countRefusal(on: pool)
            return nil
        }
        return try PasskeysTable.credential(try await checks.run(passkeyTable.credentialQuery(realm: realm, rawID: rawID), on: pool))
    }

    /// A verified assertion: what the sign-in needs of it.
    struct CheckedAssertion: Sendable {
        let passkey: AggregateActor<Passkey>
        let enrolled: PasskeyEnrolled
        let verdict: AssertionVerdict
        /// The user's stream version the credential's lookup saw.
        let userVersion: Int64
    }

    /// What a refused assertion leaves in its passkey's history (issue 43), once the ceremony is spent.
    enum FailureReport: Sendable {
        case failed(reason: String, passkey: AggregateActor<Passkey>)
        /// WebAuthn Level 3 section 7.2 step 25: a sign count that did not grow.
        case clone(stored: UInt32, received: UInt32, passkey: AggregateActor<Passkey>)
    }

    enum AssertionCheck: Sendable {
        case verified(CheckedAssertion)
        case refused(OAuthError, report: FailureReport?)
    }

    /// The assertion checked against the credential (WebAuthn Level 3 section 7.2), writing
    /// nothing: the caller spends the ceremony first, then files the report.
    /// - Parameter client: the settings of the client whose app asserted (its RP-ID's origins);
    ///   nil for the realm's own web page.
    func check(
        _ credential: AssertionCredential?, rawID: [UInt8]?, found: (passkeyID: UUID, passkeyVersion: Int64, userVersion: Int64)?,
        ceremony: PasskeyCeremonyBegun, realm: String, client: ClientSettings?
    ) async throws -> AssertionCheck {
        guard let credential, let rawID, let challenge = Base64URL.decode(ceremony.challenge) else { return .refused(Self.refused, report: nil) }
        // Issue 46: a credential never enrolled, or deleted since, is unknown (the same answer
        // for both, for every caller), with what the app needs to tell the device.
        let unknown = OAuthError.unknownCredential(Base64URL.encode(rawID), rpID: ceremony.rpID, description: Self.refused.description)
        guard let found else { return .refused(unknown, report: nil) }
        let passkey = await passkeyActors.actor(for: StreamNames.passkey(realm: realm, passkeyID: found.passkeyID))
        let state = try await passkey.current(atLeast: found.passkeyVersion).state
        guard state.isActive else { return .refused(unknown, report: nil) }
        guard let enrolled = state.enrolled, let publicKeyBytes = Base64URL.decode(enrolled.publicKey),
            let publicKey = try? COSEKey(bytes: publicKeyBytes)
        else { return .refused(Self.refused, report: nil) }
        // A credential verifies only under the RP-ID it was enrolled under.
        guard enrolled.rpID == ceremony.rpID else { return .refused(Self.refused, report: .failed(reason: "rp_id_mismatch", passkey: passkey)) }
        let stored = StoredCredential(
            credentialID: rawID, publicKey: publicKey, signCount: state.signCount, userHandle: Self.userHandle(enrolled.userID),
            backupEligible: enrolled.backupEligible)
        let realmSettings = try await tokenService.realmSettings(realm)
        do {
            let verdict = try AssertionVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client, realm: realmSettings), policy: Self.verification,
                stored: stored)
            return .verified(CheckedAssertion(passkey: passkey, enrolled: enrolled, verdict: verdict, userVersion: found.userVersion))
        } catch .signCountNotIncreasing(let stored, let received) {
            return .refused(Self.refused, report: .clone(stored: stored, received: received, passkey: passkey))
        } catch {
            return .refused(Self.refused, report: .failed(reason: error.reason, passkey: passkey))
        }
    }

    /// Files a refused assertion's report. Best effort: the caller is refused whether or not
    /// the record is written.
    private func file(_ report: FailureReport, _ grant: UserGrantRequest) async {
        await file(report, metadata: grant.metadata)
    }

    func file(_ report: FailureReport, metadata: EventMetadata) async {
        switch report {
        case .failed(let reason, let passkey):
            _ = try? await passkey.execute(.reportFailedAssertion(reason: reason), now: now(), metadata: metadata)
        case .clone(let stored, let received, let passkey):
            _ = try? await passkey.execute(.reportClone(stored: stored, received: received), now: now(), metadata: metadata)
        }
    }
}
