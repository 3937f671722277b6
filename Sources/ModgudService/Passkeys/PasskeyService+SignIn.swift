import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Usernameless passkey sign-in (docs/spec.md section 4).
extension PasskeyService {

    /// POST /connect/passkey/begin: a usernameless login ceremony (empty allowCredentials).
    /// - Throws: `ServiceRefusal` (invalid) for an unknown client, 503 without an RP-ID.
    public func beginLogin(realm: RealmDirectory.Entry, clientID: String?, metadata: EventMetadata) async throws -> Begun {
        var client: ClientSettings?
        if let clientID {
            guard let found = try await clients.enabledClient(realm: realm.realmID, clientID: clientID) else {
                throw ServiceRefusal.invalid("Passkey.UnknownClient", "Unknown client_id.")
            }
            client = found
        }
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .login, rpID: rpID, clientID: clientID, userID: nil, metadata: metadata)
        return Begun(ceremonyID: ceremonyID, options: .request(challenge: challenge, rpID: rpID, timeout: PasskeyCeremony.lifetime))
    }

    /// grant_type=urn:cocoar:passkey. Every failure is `invalid_grant` with one text
    /// (`refused`, seed 001's error table: "don't parse it for which part was wrong"); the HTTP
    /// layer adds the jitter.
    public func redeem(client: AuthenticatedClient, ceremonyID rawCeremonyID: String, assertion: String, _ grant: UserGrantRequest)
        async throws -> TokenResponse
    {
        let badCeremony = Self.refused
        let failed = Self.refused
        let realm = client.realm
        _ = try ScopePolicy.grantedScopes(requested: grant.scope, client: client.settings)
        _ = try ScopePolicy.audiences(resources: grant.resources, client: client.settings, clientID: client.id)
        guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw badCeremony }
        // The ceremony is consumed before the assertion is looked at (single use, by the store).
        guard
            let ceremony = try await consumeCeremony(
                realm: realm, ceremonyID: ceremonyID, .consume(kind: .login, clientID: client.id, userID: nil), metadata: grant.metadata)
        else { throw badCeremony }
        guard let credential = try? AssertionCredential(json: Array(assertion.utf8)), let rawID = Base64URL.decode(credential.rawId),
            let challenge = Base64URL.decode(ceremony.challenge)
        else { throw failed }
        // Issue 46: a credential never enrolled, or deleted since, is unknown (the same answer
        // for both, for every caller), with what the app needs to tell the device.
        let unknown = OAuthError.unknownCredential(Base64URL.encode(rawID), rpID: ceremony.rpID, description: Self.refused.description)
        guard let found = try await passkeyTable.credential(realm: realm, rawID: rawID) else { throw unknown }
        let passkey = await passkeyActors.actor(for: StreamNames.passkey(realm: realm, passkeyID: found.passkeyID))
        let state = try await passkey.current(atLeast: found.passkeyVersion).state
        guard state.isActive else { throw unknown }
        // A credential verifies only under the RP-ID it was enrolled under.
        guard let enrolled = state.enrolled, let publicKeyBytes = Base64URL.decode(enrolled.publicKey),
            let publicKey = try? COSEKey(bytes: publicKeyBytes)
        else { throw failed }
        guard enrolled.rpID == ceremony.rpID else {
            await reportFailure("rp_id_mismatch", passkey: passkey, grant)
            throw failed
        }
        let stored = StoredCredential(
            credentialID: rawID, publicKey: publicKey, signCount: state.signCount, userHandle: Self.userHandle(enrolled.userID),
            backupEligible: enrolled.backupEligible)
        guard let verdict = try await verify(credential, challenge: challenge, ceremony: ceremony, stored: stored, client: client, passkey: passkey, grant)
        else { throw failed }
        let user = try await userActors.actor(for: StreamNames.user(realm: realm, userID: enrolled.userID)).current(atLeast: found.userVersion).state
        // User verification was required: the passkey is two factors in one (RFC 8176 "mfa";
        // `AuthenticationContext.passkeyAMR`).
        // The tokens are minted first; their family commits with the recorded use.
        let signIn =
            user.canSignIn
            ? try await tokenService.prepareSignIn(
                client: client, user: user, grantType: .passkey, scope: grant.scope, resources: grant.resources, amr: AuthenticationContext.passkeyAMR(backupEligible: enrolled.backupEligible),
                issuer: grant.issuer, dpopKey: grant.dpopKey, acrValues: grant.acrValues)
            : nil
        let used = try await passkey.execute(
            .recordUse(signCount: verdict.newSignCount, backedUp: verdict.backedUp, at: now()), now: now(), metadata: grant.metadata,
            alsoAppending: { events in
                guard let signIn, case .used = events.first else { return [] }
                return [try signIn.write()]
            })
        guard case .used = used.events.first else { throw failed }  // a concurrent use got there with a higher count
        guard let signIn else { throw failed }
        return signIn.response
    }

    /// The assertion checked (WebAuthn Level 3 section 7.2); nil when it fails. A sign count
    /// that did not grow is recorded as a suspected clone (step 25).
    private func verify(
        _ credential: AssertionCredential, challenge: [UInt8], ceremony: PasskeyCeremonyBegun, stored: StoredCredential,
        client: AuthenticatedClient, passkey: AggregateActor<Passkey>, _ grant: UserGrantRequest
    ) async throws -> AssertionVerdict? {
        let realmSettings = try await tokenService.realmSettings(client.realm)
        do {
            return try AssertionVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client.settings, realm: realmSettings), policy: Self.verification,
                stored: stored)
        } catch .signCountNotIncreasing(let stored, let received) {
            _ = try? await passkey.execute(.reportClone(stored: stored, received: received), now: now(), metadata: grant.metadata)
            return nil
        } catch {
            await reportFailure(error.reason, passkey: passkey, grant)
            return nil
        }
    }

    /// A refused assertion of a known passkey, in its owner's history (issue 43). Best effort:
    /// the caller is refused whether or not the record is written.
    private func reportFailure(_ reason: String, passkey: AggregateActor<Passkey>, _ grant: UserGrantRequest) async {
        _ = try? await passkey.execute(.reportFailedAssertion(reason: reason), now: now(), metadata: grant.metadata)
    }
}
