import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import WebAuthn

/// The passkey assertion that approves a device authorization (RFC 8628, issue 69): a
/// ceremony of its own kind, for one authorization, verified with user verification required
/// (WebAuthn L3 section 7.2 step 17), and committed with the approval itself.
extension PasskeyService {
    /// Who asserted, as the approval records it.
    public struct DeviceApprover: Sendable, Equatable {
        public var userID: UUID
        /// RFC 8176 methods of the assertion (`AuthenticationContext.passkeyAMR`).
        public var amr: [String]
        public var userVerified: Bool
    }

    /// Begins the assertion that approves `authorizationID`. `client` is the approving app's
    /// (its RP-ID and origins), nil for the realm's web page (the realm's primary domain);
    /// `userID`, when the app is signed in, is the only person whose passkey approves.
    public func beginDeviceApproval(
        realm: RealmDirectory.Entry, authorizationID: UUID, client: (id: String, settings: ClientSettings)?, userID: UUID?, metadata: EventMetadata
    ) async throws -> Begun {
        guard let rpID = Self.rpID(client: client?.settings, realm: realm.settings) else { throw Self.unconfigured }
        let (ceremonyID, challenge) = try await begin(
            realm: realm.realmID, kind: .deviceApproval, rpID: rpID, clientID: client?.id, userID: userID, deviceAuthorizationID: authorizationID,
            metadata: metadata)
        return Begun(ceremonyID: ceremonyID, options: .request(challenge: challenge, rpID: rpID, timeout: PasskeyCeremony.lifetime))
    }

    /// Verifies the assertion of a device-approval ceremony and commits `approval`'s write (the
    /// authorization's `approved` event, at the version its caller read) with the passkey's use
    /// and the ceremony's consumption, in one append. Every refusal is `Passkey.refused`; a
    /// refused assertion spends the ceremony. `approval` may throw (the aggregate's refusal):
    /// the ceremony is spent and the error rethrown.
    public func assertDeviceApproval(
        realm: String, ceremonyID: UUID, authorizationID: UUID, assertion: String, client: (id: String, settings: ClientSettings)?, userID: UUID?,
        metadata: EventMetadata, approval: @Sendable (DeviceApprover) throws -> StreamWrite
    ) async throws -> DeviceApprover {
        let consume = PasskeyCeremony.Command.consume(kind: .deviceApproval, by: FlowBinding.Presenter(clientID: client?.id), userID: userID)
        let stream = StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID)
        let (state, version) = try await ceremonyActors.actor(for: stream).current()
        guard let begun = state.begun, begun.deviceAuthorizationID == authorizationID,
            (try? PasskeyCeremony.decide(consume, state: state, now: now())) != nil
        else { throw Self.refused }
        let ceremony = LiveCeremony(stream: stream, begun: begun, version: version)
        let credential = try? AssertionCredential(json: Array(assertion.utf8))
        let rawID = credential.flatMap { Base64URL.decode($0.rawId) }
        let found = try await lookUpCredential(rawID, realm: realm, checks: .none)
        let checked: CheckedAssertion
        switch try await check(credential, rawID: rawID, found: found, ceremony: begun, realm: realm, client: client?.settings) {
        case .refused(let refusal, let report):
            _ = try await consumeCeremony(realm: realm, ceremonyID: ceremonyID, consume, metadata: metadata)
            if let report { await file(report, metadata: metadata) }
            throw refusal
        case .verified(let verified):
            checked = verified
        }
        let approver = DeviceApprover(
            userID: checked.enrolled.userID, amr: SignInFactor.passkey(backupEligible: checked.enrolled.backupEligible).methods(secondFactor: false),
            userVerified: checked.verdict.userVerified)
        let write: StreamWrite
        do {
            // A signed-in app approves only with its own person's passkey.
            guard userID == nil || userID == approver.userID else { throw Self.refused }
            write = try approval(approver)
        } catch {
            _ = try await consumeCeremony(realm: realm, ceremonyID: ceremonyID, consume, metadata: metadata)
            throw error
        }
        try await recordUse(checked, consuming: ceremony, also: write, realm: realm, consume: consume, metadata: metadata)
        return approver
    }

    /// Spends a device-approval ceremony without an assertion (the person denies the device);
    /// false when it is not live, not for `authorizationID`, or not this caller's.
    public func spendDeviceApproval(realm: String, ceremonyID: UUID, authorizationID: UUID, clientID: String?, userID: UUID?, metadata: EventMetadata)
        async throws -> Bool
    {
        let stream = StreamNames.passkeyCeremony(realm: realm, ceremonyID: ceremonyID)
        guard try await ceremonyActors.actor(for: stream).current().state.begun?.deviceAuthorizationID == authorizationID else { return false }
        let consume = PasskeyCeremony.Command.consume(kind: .deviceApproval, by: FlowBinding.Presenter(clientID: clientID), userID: userID)
        return try await consumeCeremony(realm: realm, ceremonyID: ceremonyID, consume, metadata: metadata) != nil
    }
}
