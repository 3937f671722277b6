import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OpenID Connect Native SSO for Mobile Apps, draft 07 (issue 69; docs/guides/native-sso.md):
/// one sign-in shared by a vendor's apps on a device. The first app signs in with the
/// `device_sso` scope and shares its `DeviceSession` where its teammates can read it (an iOS
/// keychain access group, an Android account); a teammate signs in with it, no code, no
/// passkey; any of them signs the device out.
///
/// ```swift
/// // App 1 (configuration scope "openid offline_access device_sso"):
/// try await app1.signIn(email: email, code: code)
/// if let shared = try await app1.deviceSession() { try keychain.save(shared) }   // access group
/// // App 2, same team:
/// try await app2.signIn(withDeviceSession: try keychain.load())
/// ```
extension ModgudClient {
    /// What the team's apps share: the ID token and the device secret of the device session.
    public struct DeviceSession: Codable, Sendable, Equatable {
        public var idToken: String
        public var deviceSecret: String

        public init(idToken: String, deviceSecret: String) {
            self.idToken = idToken
            self.deviceSecret = deviceSecret
        }
    }

    static let deviceSecretType = "urn:openid:params:token-type:device-secret"

    /// The device session of the current sign-in, when it has one (it asked for `device_sso`
    /// and the client is in a team of the realm).
    public func deviceSession() async throws -> DeviceSession? {
        guard let session = try await loadSession(), let idToken = session.idToken, let secret = session.deviceSecret else { return nil }
        return DeviceSession(idToken: idToken, deviceSecret: secret)
    }

    /// Signs this app in from a teammate's device session (section 4: the token exchange with
    /// the ID token as subject and the device secret as actor, `audience` the issuer). The
    /// session keeps the device secret, so this app can share it and sign the device out too.
    /// A session bound to a DPoP key needs this client to hold the same key. Throws
    /// `.sessionEnded` when the device session ended (signed out, expired, revoked) or the ID
    /// token is not its: sign in as usual.
    @discardableResult
    public func signIn(withDeviceSession shared: DeviceSession) async throws -> ModgudSession {
        var session: ModgudSession
        do {
            session = try await exchangeDeviceSession(shared)
        } catch ModgudError.oauth("invalid_grant", let description?, _) where description.hasPrefix("session:") || description.hasPrefix("subject_token:") {
            throw ModgudError.sessionEnded
        }
        if session.deviceSecret == nil {
            session.deviceSecret = shared.deviceSecret
            try await store.save(session)
            self.session = session
        }
        return session
    }

    private func exchangeDeviceSession(_ shared: DeviceSession) async throws -> ModgudSession {
        try await token([
            ("grant_type", Self.tokenExchange), ("client_id", configuration.clientID), ("subject_token", shared.idToken),
            ("subject_token_type", Self.idTokenType), ("actor_token", shared.deviceSecret), ("actor_token_type", Self.deviceSecretType),
            ("audience", configuration.issuerText), ("scope", configuration.scope.split(separator: " ").filter { $0 != "device_sso" }.joined(separator: " ")),
        ])
    }

    /// Signs every app of the device session out (RFC 7009 with the device secret: the server
    /// ends each app's sign-in in it), and forgets this app's session. Without a device
    /// session, the same as `signOut()`.
    public func signOutOfDevice() async throws {
        guard let secret = try await loadSession()?.deviceSecret else { return try await signOut() }
        let revocation = try await discovery().revocationEndpoint
        _ = try checked(try await exchange(Self.form(revocation, [("token", secret), ("client_id", configuration.clientID)])))
        try await signOut()
    }
}
