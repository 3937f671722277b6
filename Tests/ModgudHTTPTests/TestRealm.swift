import Foundation
import ModgudDomain
@testable import ModgudService

/// The smallest realm the HTTP tests sign in to: realm `dev` on host `localhost` with a
/// signing key, the public client `app` (otp, refresh_token) and the confirmed user ada.
enum TestRealm {
    /// Creates the realm, its key, the client and the user; returns the user.
    static func seed(_ core: ModgudCore) async throws -> User.State {
        let admin = core.administration
        // The client gets its native grant while the realm's flag is on (issue 65, item 7); the
        // realm then has them off, as these tests sign in through the services, not the grants.
        _ = try await admin.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true)), metadata: .init())
        try await core.keys.rotate(realm: "dev", now: Date(), metadata: .init())
        _ = try await admin.clients.create(
            realm: "dev", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"]),
            metadata: .init())
        _ = try await admin.realms.update("dev", metadata: .init()) { $0 = RealmSettings(hosts: ["localhost"], displayName: "Dev") }
        let id = try await core.administration.users.create(realm: "dev", email: "ada@example.com", metadata: .init()).id
        return try await core.administration.users.state(realm: "dev", id: id)
    }

    /// One sign-in of `user` with client `app` (scope openid offline_access).
    static func signIn(_ core: ModgudCore, _ user: User.State) async throws -> TokenResponse {
        let app = try await core.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)
        return try await core.tokenService.signIn(
            client: app, user: user, grantType: .otp, scope: "openid offline_access", resources: [], amr: ["otp"], issuer: "https://localhost",
            metadata: .init())
    }
}
