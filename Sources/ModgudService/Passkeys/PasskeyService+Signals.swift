import Foundation
import ModgudDomain
import WebAuthn

/// What an app tells the device so that its passkey list stays true (issue 46; WebAuthn Level 3
/// section 5.1.10, the Signal API: `signalAllAcceptedCredentials` and
/// `signalCurrentUserDetails`; iOS's `ASCredentialUpdater`; androidx.credentials' signal requests).
extension PasskeyService {
    /// One RP-ID's signals for one person.
    public struct Signals: Sendable, Equatable {
        public var rpID: String
        /// The WebAuthn user handle (base64url): the person's id as 16 bytes.
        public var userHandle: String
        /// base64url credential ids of every live passkey of the person under `rpID`: the
        /// device hides the others.
        public var acceptedCredentialIDs: [String]
        /// The account name and display name the device shows (the address and the names now).
        public var name: String
        public var displayName: String
    }

    /// Issue 46: whether the person signed in by `response` may be offered an automatic upgrade
    /// by `client`: it may use passkeys, has an RP-ID, and the person has no live passkey
    /// under it. Read after the sign-in committed (a user the grant created holds none: no
    /// read); nil (no hint) when unsure.
    public func upgradeHint(for response: TokenResponse, client: AuthenticatedClient) async -> Bool? {
        guard client.settings.grants.contains(.passkey), let userID = response.signIn?.userID,
            let realm = try? await tokenService.realmSettings(client.realm), let rpID = Self.rpID(client: client.settings, realm: realm),
            let held = response.userIsNew ? [] : try? await passkeyTable.credentialIDs(realm: client.realm, userID: userID, rpID: rpID)
        else { return nil }
        return held.isEmpty ? true : nil
    }

    /// GET /connect/passkey/signals: the person's signals for the RP-ID of `clientID` (always,
    /// an empty list included: "none accepted" is a signal too) and for every other RP-ID they
    /// have passkeys under.
    public func signals(realm: RealmDirectory.Entry, userID: UUID, clientID: String) async throws -> [Signals] {
        let user = try await userActors.actor(for: StreamNames.user(realm: realm.realmID, userID: userID)).current().state
        let profile = try await vault.profile(of: user)
        let name = profile.email ?? userID.uuidString.lowercased()
        let displayName = profile.displayName.isEmpty ? name : profile.displayName
        let client = try await clients.enabledClient(realm: realm.realmID, clientID: clientID)
        var byRPID: [String: [String]] = [:]
        if let own = Self.rpID(client: client, realm: realm.settings) { byRPID[own] = [] }
        for passkey in try await list(realm: realm.realmID, userID: userID, withCredentials: true) {
            byRPID[passkey.rpID, default: []].append(passkey.credential?.credentialID ?? "")
        }
        let handle = Base64URL.encode(Self.userHandle(userID))
        return byRPID.keys.sorted().map { rpID in
            Signals(
                rpID: rpID, userHandle: handle, acceptedCredentialIDs: byRPID[rpID, default: []].filter { !$0.isEmpty }.sorted(), name: name,
                displayName: displayName)
        }
    }
}
