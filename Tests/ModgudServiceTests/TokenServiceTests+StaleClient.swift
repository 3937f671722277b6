import Foundation
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 40, item 2: the client cache of one instance may predate a change made on another
/// (the settings notification is a hint, the cache's bound is 5 s). A refresh reads the client
/// from the store in its one lookup, so the next refresh anywhere sees a disable or a new secret.
extension TokenServiceTests {
    func testADisabledClientIsRefusedAtTheNextRefreshWhateverTheCacheSays() async throws {
        let tokens = try await signIn()
        let cached = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        // Another instance disables the client; this instance's cache is not told.
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app")).execute(.disable, now: now, metadata: .none)
        let stale = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        XCTAssertEqual(stale, cached, "the cache still holds the enabled client (the case this guards)")
        do {
            _ = try await service.refresh(RefreshRequest(client: stale, refreshToken: tokens.refreshToken!, issuer: issuer, metadata: .none))
            XCTFail("the client is disabled")
        } catch let error as OAuthError {
            XCTAssertEqual(error, .invalidGrant("The OAuth client is disabled."))
        }
    }

    /// Issue 65: a disabled client's access tokens stop at once, as its refresh does:
    /// introspection says inactive, and the protected endpoints' lookup finds nothing.
    func testADisabledClientsAccessTokensAreInactiveEverywhere() async throws {
        let tokens = try await signIn()
        let live = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertTrue(live.active, "the control: live before the disable")
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app")).execute(.disable, now: now, metadata: .none)
        let introspected = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertFalse(introspected.active)
        let found = try await introspection.liveAccessToken(realm: "demo", token: tokens.accessToken)
        XCTAssertNil(found, "userinfo, the passkey and the account endpoints authenticate through this lookup")
    }

    func testARotatedSecretIsRefusedAtTheNextRefreshWhateverTheCacheSays() async throws {
        let (secret, hash) = ClientAuthenticator.generateSecret()
        try await register(
            "conf", ClientSettings(type: .confidential, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"]), secretHash: hash)
        let client = try await authenticator.authenticate(realm: "demo", clientID: "conf", secret: secret)
        let tokens = try await service.signIn(
            client: client, user: user, grantType: .otp, scope: "openid offline_access", resources: [], amr: ["otp"], issuer: issuer, metadata: .none)
        let refreshed = try await service.refresh(RefreshRequest(client: client, refreshToken: tokens.refreshToken!, issuer: issuer, metadata: .none))
        // Another instance rotates the secret; this one still accepts the old one from its cache.
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "conf"))
            .execute(.rotateSecret(secretHash: ClientAuthenticator.generateSecret().hash), now: now, metadata: .none)
        let stale = try await authenticator.authenticate(realm: "demo", clientID: "conf", secret: secret)
        await expect("invalid_client", attempted: true) {
            _ = try await self.service.refresh(RefreshRequest(client: stale, refreshToken: refreshed.refreshToken!, issuer: self.issuer, metadata: .none))
        }
    }

    func testADeletedClientIsRefusedAtTheNextRefreshWhateverTheCacheSays() async throws {
        let tokens = try await signIn()
        let stale = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app")).execute(.delete, now: now, metadata: .none)
        await expect("invalid_client") {
            _ = try await self.service.refresh(RefreshRequest(client: stale, refreshToken: tokens.refreshToken!, issuer: self.issuer, metadata: .none))
        }
    }
}
