import EventSourcing
import Foundation
import ModgudDomain

/// OpenID Connect Native SSO for Mobile Apps, draft 07 (issue 69): a teammate app's sign-in
/// from the device session's ID token and device secret (section 4), and the sign-out on the
/// device that ends every app's sign-in in the session (issue 68: out of `TokenService`).
public struct NativeSSOService: Sendable {
    let tokenService: TokenService
    let families: AggregateRegistry<TokenFamily>
    let users: AggregateRegistry<User>
    let tokens: TokenTables
    let keys: SigningKeyRing
    let realms: RealmDirectory
    let now: @Sendable () -> Date

    /// The token exchange request of section 4.1, parsed.
    public struct DeviceSSOExchange: Sendable {
        /// `subject_token`: an ID token of the device session.
        public var idToken: String
        /// `actor_token`: the device secret.
        public var deviceSecret: String
        public var scope: String?
        public var resources: [String]
        public var nonce: String?

        public init(idToken: String, deviceSecret: String, scope: String?, resources: [String], nonce: String?) {
            self.idToken = idToken
            self.deviceSecret = deviceSecret
            self.scope = scope
            self.resources = resources
            self.nonce = nonce
        }
    }

    /// The answer to a device secret of a session that ended, or never was.
    static let deviceSessionEnded = NativeSSO.refusal("session", "The device session has ended: sign in again.")

    /// Section 4.3's checks, then a sign-in of `client` into the device session: a new token
    /// family that joins it, with the session's `auth_time` and methods, and no new device
    /// secret (the device keeps the one its apps share).
    ///
    /// The checks: the client is in a Native SSO team; the device secret names a live device
    /// session of that team (not revoked, within the realm's absolute session lifetime, the
    /// person still able to sign in with the same security stamp); the ID token is signed by
    /// the realm, issued by it to an app of the team, for the session's person, and its `sid`
    /// and `ds_hash` are the session's; a session bound to a DPoP key needs a proof by it.
    public func exchangeDeviceSecret(
        client: AuthenticatedClient, _ exchange: DeviceSSOExchange, issuer: String, dpopKey: String?, metadata: EventMetadata
    ) async throws -> TokenResponse {
        guard let team = try await realms.requiredSettings(client.realm).nativeSSOTeam(of: client.id) else {
            throw NativeSSO.refusal("team", "The client is in no Native SSO team of the realm.")
        }
        if let scope = exchange.scope, !scope.split(separator: " ").contains("openid") {
            throw OAuthError.invalidScope("The scope of a Native SSO exchange must include openid.")
        }
        let secretHash = OpaqueToken.hash(exchange.deviceSecret)
        guard let sessionID = try await tokens.deviceSession(secretHash: secretHash, realm: client.realm) else { throw Self.deviceSessionEnded }
        let origin = await families.actor(for: StreamNames.tokenFamily(realm: client.realm, familyID: sessionID))
        let session = try await origin.current().state
        guard let started = session.started, started.startsDeviceSession, let link = started.deviceSession, let userID = started.userID,
            session.revoked == nil
        else { throw Self.deviceSessionEnded }
        guard let claims = await keys.verified(exchange.idToken, as: DeviceSSOSubjectClaims.self, realm: client.realm),
            claims.iss.value == issuer, claims.sub.value == userID.uuidString.lowercased(), claims.sid == sessionID.uuidString.lowercased(),
            ConstantTime.equal(claims.dsHash ?? "", secretHash)
        else { throw NativeSSO.refusal("subject_token", "The ID token is not one of this device session's.") }
        guard link.team == team.name, claims.aud.value.contains(where: team.clients.contains) else {
            throw NativeSSO.refusal("team", "The device session belongs to another team of apps.")
        }
        if let bound = link.dpopKey, bound != dpopKey {
            throw OAuthError(
                "invalid_dpop_proof",
                dpopKey == nil ? "The device session is bound to a DPoP key: send a DPoP proof by it." : "The DPoP proof is by another key than the device session's.")
        }
        let lifetimes = TokenLifetimes(try await realms.requiredSettings(client.realm))
        guard now() < started.authTime.addingTimeInterval(lifetimes.session) else { throw Self.deviceSessionEnded }
        let user = try await users.actor(for: StreamNames.user(realm: client.realm, userID: userID)).current().state
        guard user.canSignIn, user.securityStamp == started.securityStamp else { throw Self.deviceSessionEnded }
        var grant = UserGrantRequest(
            client: client, scope: exchange.scope, resources: exchange.resources, totpCode: nil, issuer: issuer, metadata: metadata, dpopKey: dpopKey)
        grant.nonce = exchange.nonce
        let prepared = try await SignInPipeline(tokens: tokenService, secondFactor: nil).prepareOpen(
            .deviceSession(link, amr: started.amr, at: started.authTime), AccountGate(user: user), grant)
        _ = try await families.actor(forNew: prepared.stream).execute(.start(prepared.started), now: now(), metadata: metadata)
        // A sign-out between the look above and this write listed the session's families before
        // this one existed. It revokes the session's own family first, so a second look sees
        // it: then this sign-in ends too (the write came before that look, so a sign-out after
        // it lists this family and revokes it itself).
        if try await origin.current().state.revoked != nil {
            _ = try await families.actor(for: prepared.stream).execute(.revoke(.deviceSignOut), now: now(), metadata: metadata)
            throw Self.deviceSessionEnded
        }
        return prepared.response
    }

    /// Sign-out on the device (RFC 7009 with the device secret as the token): the device
    /// session's own family first, then every family that joined it, revoked as
    /// `device_sign_out` (each a Shared Signals session-revoked). Only a client of the
    /// session's team may; false when `token` is no device secret it may end.
    func endDeviceSession(client: AuthenticatedClient, token: String, metadata: EventMetadata) async throws -> Bool {
        guard let team = try await realms.requiredSettings(client.realm).nativeSSOTeam(of: client.id),
            let sessionID = try await tokens.deviceSession(secretHash: OpaqueToken.hash(token), realm: client.realm)
        else { return false }
        let origin = await families.actor(for: StreamNames.tokenFamily(realm: client.realm, familyID: sessionID))
        guard try await origin.current().state.started?.deviceSession?.team == team.name else { return false }
        _ = try await origin.execute(.revoke(.deviceSignOut), now: now(), metadata: metadata)
        for familyID in try await tokens.liveFamilies(realm: client.realm, deviceSession: sessionID) {
            _ = try await families.actor(for: StreamNames.tokenFamily(realm: client.realm, familyID: familyID))
                .execute(.revoke(.deviceSignOut), now: now(), metadata: metadata)
        }
        return true
    }
}
