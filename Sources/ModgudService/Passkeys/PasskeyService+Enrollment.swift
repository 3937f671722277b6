import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Adding a passkey to a signed-in user (docs/spec.md section 4).
extension PasskeyService {

    /// POST /connect/passkey/enroll/begin: creation options for the bearer's user under the
    /// RP-ID of the client the bearer token was issued to.
    /// - Parameter conditional: an automatic upgrade (`mediation=conditional`); the caller
    ///   checked `requireUpgradeSignIn`.
    public func beginEnrollment(realm: RealmDirectory.Entry, userID: UUID, clientID: String, conditional: Bool = false, metadata: EventMetadata)
        async throws -> Begun
    {
        let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID)
        guard let rpID = Self.rpID(client: client, realm: realm.settings) else { throw Self.unconfigured }
        let user = try await userActors.actor(for: StreamNames.user(realm: realm.realmID, userID: userID)).current().state
        guard user.canSignIn else { throw ServiceRefusal.invalid("Passkey.InvalidRequest", "Invalid request.") }
        // excludeCredentials: the user's live passkeys under this RP-ID, in one indexed read.
        let exclude = try await passkeyTable.credentialIDs(realm: realm.realmID, userID: userID, rpID: rpID)
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .enrollment, rpID: rpID, clientID: clientID, userID: userID, conditional: conditional, metadata: metadata)
        // Shown by the authenticator only; opened for this answer, never stored.
        let profile = try await vault.profile(of: user)
        let name = profile.email ?? userID.uuidString.lowercased()
        let displayName = profile.displayName
        return Begun(
            ceremonyID: ceremonyID,
            options: .creation(
                challenge: challenge, rpID: rpID, rpName: realm.settings.displayName, userHandle: Base64URL.encode(Self.userHandle(userID)),
                userName: name, userDisplayName: displayName.isEmpty ? name : displayName, exclude: exclude,
                timeout: PasskeyCeremony.lifetime))
    }

    /// One enrolled passkey as its owner sees it.
    public struct Summary: Sendable, Equatable {
        public var id: UUID
        public var displayName: String
        public var rpID: String
        public var createdAt: Date
        public var lastUsedAt: Date?
        /// Who holds it, from its AAGUID (`PasskeyProviders`).
        public var provider: PasskeyProviders.Provider
        /// The credential itself, as Auth0's My Account API shows a passkey (nil unless asked:
        /// `list(…, withCredentials:)`; an enrollment always has it).
        public var credential: Credential?

        /// The WebAuthn facts of an enrolled credential: nothing secret (a public key and ids).
        public struct Credential: Sendable, Equatable {
            /// base64url of the WebAuthn credential id.
            public var credentialID: String
            /// base64url of the COSE_Key.
            public var publicKey: String
            /// The user handle the credential holds (the owner's id as 16 bytes).
            public var userHandle: [UInt8]
            public var userID: UUID
            public var backupEligible: Bool
            /// Whether it is backed up now (the flag of its last use, else of its enrollment).
            public var backedUp: Bool
            public var transports: [String]

            init(_ enrolled: PasskeyEnrolled, backedUp: Bool) {
                credentialID = enrolled.credentialID
                publicKey = enrolled.publicKey
                userHandle = PasskeyService.userHandle(enrolled.userID)
                userID = enrolled.userID
                backupEligible = enrolled.backupEligible
                self.backedUp = backedUp
                transports = enrolled.transports
            }
        }
    }

    /// POST /connect/passkey/enroll: verifies the attestation against the ceremony and
    /// records the passkey. - Throws: `ServiceRefusal` (invalid) with docs/spec.md's messages.
    public func completeEnrollment(
        realm: RealmDirectory.Entry, userID: UUID, clientID: String, ceremonyID rawCeremonyID: String, attestation: [UInt8], displayName: String?,
        metadata: EventMetadata
    ) async throws -> Summary {
        guard let ceremonyID = UUID(uuidString: rawCeremonyID) else { throw ServiceRefusal.invalid("Passkey.InvalidRequest", "Invalid request.") }
        guard
            let ceremony = try await consumeCeremony(
                realm: realm.realmID, ceremonyID: ceremonyID, .consume(kind: .enrollment, by: .init(clientID: clientID), userID: userID), metadata: metadata)
        else { throw ServiceRefusal.invalid("Passkey.SessionExpired", "The enrollment session expired.") }
        let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID)
        let verdict: RegistrationVerdict
        do {
            let credential = try RegistrationCredential(json: attestation)
            guard let challenge = Base64URL.decode(ceremony.challenge) else { throw WebAuthnError.malformedCredential("challenge") }
            verdict = try await RegistrationVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: ceremony.rpID,
                origins: Self.origins(rpID: ceremony.rpID, client: client, realm: realm.settings),
                policy: ceremony.conditional == true ? Self.upgradeVerification : Self.verification)
        } catch {
            throw ServiceRefusal.invalid("Passkey.InvalidAttestation", "Invalid attestation.")
        }
        let time = now()
        let passkeyID = UUID()
        let name = Self.cleanName(displayName) ?? "Passkey"
        let sealed = try await sealName(name, userID: userID, realm: realm.realmID)
        let enrolled = Self.enrolled(verdict, passkeyID: passkeyID, userID: userID, rpID: ceremony.rpID, name: sealed, clientID: clientID, at: time)
        do {
            _ = try await passkeyActors.actor(forNew: StreamNames.passkey(realm: realm.realmID, passkeyID: passkeyID))
                .execute(.enroll(enrolled), now: time, metadata: metadata)
        } catch let taken where PasskeysTable.isCredentialTaken(taken) {
            throw ServiceRefusal.invalid("Passkey.AlreadyRegistered", "This passkey is already registered.")
        } catch is DomainError {
            throw ServiceRefusal.invalid("Passkey.EnrollmentFailed", "Enrollment failed.")
        }
        return Summary(
            id: passkeyID, displayName: name, rpID: ceremony.rpID, createdAt: time, lastUsedAt: nil,
            provider: PasskeyProviders.provider(aaguid: Base64URL.encode(verdict.aaguid)),
            credential: Summary.Credential(enrolled, backedUp: enrolled.backedUp))
    }
}
