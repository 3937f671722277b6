import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class TokenServiceTests: XCTestCase {
    var database: TestDatabase!
    var instance: IdentityInstance!
    var service: TokenService!
    var introspection: TokenIntrospection!
    var revocation: TokenRevocation!
    var credentials: ClientCredentialsService!
    var authenticator: ClientAuthenticator!
    var serviceSecret = ""
    var user: User.State!
    let issuer = "https://login.demo.test"

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        instance = IdentityInstance(pool: database.pool)
        let ring = SigningKeyRing(pool: database.pool, sealer: try KeySealer(masterKey: Array(repeating: 1, count: 32)), realms: instance.realms)
        service = TokenService(pool: database.pool, families: instance.families, users: instance.users, minter: TokenMinter(keys: ring),
            realms: RealmDirectory(pool: database.pool), vault: try PersonalDataVault(pool: database.pool, masterKey: Array(repeating: 1, count: 32)))
        let (tables, realms) = (TokenTables(pool: database.pool), RealmDirectory(pool: database.pool))
        introspection = TokenIntrospection(families: instance.families, tokens: tables, keys: ring, now: { Date() })
        let deviceSessions = NativeSSOService(
            tokenService: service, families: instance.families, users: instance.users, tokens: tables, keys: ring, realms: realms, now: { Date() })
        revocation = TokenRevocation(families: instance.families, tokens: tables, introspection: introspection, deviceSessions: deviceSessions, now: { Date() })
        credentials = ClientCredentialsService(families: instance.families, minter: TokenMinter(keys: ring), realms: realms, now: { Date() })
        authenticator = ClientAuthenticator(pool: database.pool)
        _ = try await instance.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
        try await ring.rotate(realm: "demo", now: now, metadata: .none)
        try await register("app", ClientSettings(
            type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "email", "offline_access", "api"],
            audiences: ["https://api.demo.test", "https://files.demo.test"]), secretHash: nil)
        try await register("jwt-app", ClientSettings(
            type: .public, grants: [.otp], allowedScopes: ["openid", "api"], accessTokenFormat: .jwt), secretHash: nil)
        let (secret, hash) = ClientAuthenticator.generateSecret()
        serviceSecret = secret
        try await register("svc", ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]), secretHash: hash)
        let id = UUID()
        user = try await instance.user(id).execute(
            .register(id: id, email: .plain("ada@example.com"), emailConfirmed: true, username: nil, firstName: .plain("Ada"), lastName: nil,
                securityStamp: "s1", via: "otp"), now: now, metadata: .none).state
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func register(_ id: String, _ settings: ClientSettings, secretHash: String?) async throws {
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: id))
            .execute(.register(id: id, settings: settings, secretHash: secretHash), now: now, metadata: .none)
    }

    /// - Parameter attempted: for `invalid_client`, whether authentication was attempted (401).
    func expect(_ error: String, attempted: Bool = false, _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(error)")
        } catch let failure as OAuthError {
            XCTAssertEqual(failure.error, error, failure.description)
            XCTAssertEqual(failure.authenticationAttempted, attempted)
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func signIn(_ clientID: String = "app", scope: String = "openid email offline_access") async throws -> TokenResponse {
        let client = try await authenticator.authenticate(realm: "demo", clientID: clientID, secret: nil)
        return try await service.signIn(client: client, user: user, grantType: .otp, scope: scope, resources: [], amr: ["otp"], issuer: issuer, metadata: .none)
    }

    func testClientAuthentication() async throws {
        await expect("invalid_client", attempted: true) { _ = try await self.authenticator.authenticate(realm: "demo", clientID: "svc", secret: "wrong") }
        await expect("invalid_client", attempted: true) { _ = try await self.authenticator.authenticate(realm: "demo", clientID: "svc", secret: nil) }
        await expect("invalid_client", attempted: false) { _ = try await self.authenticator.authenticate(realm: "demo", clientID: "nobody", secret: nil) }
        await expect("invalid_client", attempted: true) { _ = try await self.authenticator.authenticate(realm: "demo", clientID: "nobody", secret: "x") }
        await expect("invalid_client", attempted: true) { _ = try await self.authenticator.authenticate(realm: "demo", clientID: "app", secret: "x") }
        await expect("invalid_client", attempted: false) { _ = try await self.authenticator.authenticate(realm: "other", clientID: "app", secret: nil) }
        let svc = try await authenticator.authenticate(realm: "demo", clientID: "svc", secret: serviceSecret)
        XCTAssertEqual(svc.id, "svc")
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app")).execute(.disable, now: now, metadata: .none)
        // The authenticator holds clients per instance; writers drop the entry after a change
        // (Administration does, and SettingsChangeListener for the other instances).
        authenticator.invalidate(realm: "demo", clientID: "app")
        do {
            _ = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
            XCTFail("disabled")
        } catch let error as OAuthError {
            XCTAssertEqual(error, .invalidGrant("The OAuth client is disabled."))
        }
    }

    func testSignInRefreshRotationAndReuse() async throws {
        let first = try await signIn()
        XCTAssertNotNil(first.refreshToken)
        XCTAssertNotNil(first.idToken)
        XCTAssertEqual(first.expiresIn, 900)
        XCTAssertEqual(first.scope, "openid email offline_access")
        let active = try await introspection.introspect(realm: "demo", token: first.accessToken)
        XCTAssertTrue(active.active)
        XCTAssertEqual(active.subject, user.id!.uuidString.lowercased())

        let client = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let second = try await service.refresh(RefreshRequest(client: client, refreshToken: first.refreshToken!, issuer: issuer, metadata: .none))
        XCTAssertNotEqual(second.refreshToken, first.refreshToken, "rotated")
        await expect("invalid_grant") {
            _ = try await self.service.refresh(RefreshRequest(client: client, refreshToken: first.refreshToken!, issuer: self.issuer, metadata: .none))
        }
        await expect("invalid_grant") {
            _ = try await self.service.refresh(RefreshRequest(client: client, refreshToken: second.refreshToken!, issuer: self.issuer, metadata: .none))
        }
        for token in [first.accessToken, second.accessToken] {
            let result = try await introspection.introspect(realm: "demo", token: token)
            XCTAssertEqual(result, .inactive, "the whole family died")
        }
        let reuse = try await database.pool.query("SELECT count(*) FROM events WHERE type = 'token_family.revoked' AND payload->>'reason' = 'reuse'")
            .first!.decode(Int.self, at: 0)
        XCTAssertEqual(reuse, 1, "the reuse is an audited event")
    }

    func testNoRefreshTokenWithoutOfflineAccessAndNoIDTokenWithoutOpenID() async throws {
        let plain = try await signIn(scope: "api")
        XCTAssertNil(plain.refreshToken)
        XCTAssertNil(plain.idToken)
        await expect("invalid_scope") { _ = try await self.signIn(scope: "admin") }
    }

    func testResourcesNarrowTheAudienceAndUnknownOnesAreRefused() async throws {
        let client = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let narrowed = try await service.signIn(
            client: client, user: user, grantType: .otp, scope: "api offline_access", resources: ["https://api.demo.test"], amr: ["otp"],
            issuer: issuer, metadata: .none)
        let introspected = try await introspection.introspect(realm: "demo", token: narrowed.accessToken)
        XCTAssertEqual(introspected.audiences, ["https://api.demo.test"])
        await expect("invalid_target") {
            _ = try await self.service.refresh(RefreshRequest(
                client: client, refreshToken: narrowed.refreshToken!, resources: ["https://files.demo.test"], issuer: self.issuer, metadata: .none))
        }
        await expect("invalid_target") {
            _ = try await self.service.signIn(
                client: client, user: self.user, grantType: .otp, scope: "api", resources: ["https://evil.test"], amr: ["otp"], issuer: self.issuer,
                metadata: .none)
        }
    }

    /// Issue 65, RFC 8707 section 2.2: a refresh may ask for any resource the original grant
    /// allows. A sign-in that named none allows each audience the client is permitted (the
    /// guide's refresh carries `resource=<api-audience>`); one that named a resource allows it
    /// alone; an audience the client was never permitted is `invalid_target` either way.
    func testARefreshAsksForAnyResourceTheOriginalGrantAllows() async throws {
        let client = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let open = try await service.signIn(
            client: client, user: user, grantType: .otp, scope: "api offline_access", resources: [], amr: ["otp"], issuer: issuer, metadata: .none)
        let forAPI = try await service.refresh(RefreshRequest(
            client: client, refreshToken: open.refreshToken!, resources: ["https://api.demo.test"], issuer: issuer, metadata: .none))
        let introspected = try await introspection.introspect(realm: "demo", token: forAPI.accessToken)
        XCTAssertEqual(introspected.audiences, ["https://api.demo.test"])
        XCTAssertEqual(forAPI.scope, "api offline_access", "the grant's scopes, never wider")
        let forFiles = try await service.refresh(RefreshRequest(
            client: client, refreshToken: forAPI.refreshToken!, resources: ["https://files.demo.test"], issuer: issuer, metadata: .none))
        let files = try await introspection.introspect(realm: "demo", token: forFiles.accessToken)
        XCTAssertEqual(files.audiences, ["https://files.demo.test"], "the grant, not the last token, decides")
        await expect("invalid_target") {
            _ = try await self.service.refresh(RefreshRequest(
                client: client, refreshToken: forFiles.refreshToken!, resources: ["https://evil.test"], issuer: self.issuer, metadata: .none))
        }
    }

    func testLogoutEverywhereEndsRefreshAndAccessAtOnce() async throws {
        let tokens = try await signIn()
        _ = try await instance.user(user.id!).execute(.rotateSecurityStamp(newStamp: "s2", reason: .logoutEverywhere), now: now, metadata: .none)
        let introspected = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertFalse(introspected.active)
        let client = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        await expect("invalid_grant") {
            _ = try await self.service.refresh(RefreshRequest(client: client, refreshToken: tokens.refreshToken!, issuer: self.issuer, metadata: .none))
        }
    }

    func testClientCredentialsOnlyForServiceClients() async throws {
        let svc = try await authenticator.authenticate(realm: "demo", clientID: "svc", secret: serviceSecret)
        let token = try await credentials.clientCredentials(client: svc, scope: "api", resources: [], issuer: issuer, metadata: .none)
        XCTAssertNil(token.refreshToken)
        XCTAssertNil(token.idToken)
        let introspected = try await introspection.introspect(realm: "demo", token: token.accessToken)
        XCTAssertEqual(introspected.subject, "svc")
        let app = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        await expect("unauthorized_client") {
            _ = try await self.credentials.clientCredentials(client: app, scope: nil, resources: [], issuer: self.issuer, metadata: .none)
        }
        await expect("unauthorized_client") {
            _ = try await self.service.refresh(RefreshRequest(client: svc, refreshToken: "x", issuer: self.issuer, metadata: .none))
        }
    }

    func testRevocationPerRFC7009() async throws {
        let tokens = try await signIn()
        let app = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let svc = try await authenticator.authenticate(realm: "demo", clientID: "svc", secret: serviceSecret)
        try await revocation.revoke(client: svc, token: tokens.refreshToken!, metadata: .none)  // not svc's: ignored
        let stillActive = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertTrue(stillActive.active)
        try await revocation.revoke(client: app, token: "never-issued", metadata: .none)  // unknown: no error
        try await revocation.revoke(client: app, token: tokens.refreshToken!, metadata: .none)
        let revoked = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertFalse(revoked.active)
        let unknown = try await introspection.introspect(realm: "demo", token: "garbage")
        XCTAssertEqual(unknown, .inactive)
    }

    func testJWTAccessTokensIntrospectThroughTheirJTI() async throws {
        let tokens = try await signIn("jwt-app", scope: "openid api")
        XCTAssertEqual(tokens.accessToken.split(separator: ".").count, 3)
        let introspected = try await introspection.introspect(realm: "demo", token: tokens.accessToken)
        XCTAssertTrue(introspected.active)
        XCTAssertEqual(introspected.clientID, "jwt-app")
    }

    /// Issue 44: a JWT access token is recorded by the hash of the whole token, so one with
    /// its jti and claims but another signature, or its signature over changed claims, or no
    /// signature at all, is no one's: not live, inactive at introspection, and not revocable.
    func testAJWTAccessTokenCountsOnlyWithItsOwnSignature() async throws {
        let tokens = try await signIn("jwt-app", scope: "openid api")
        let other = try await signIn("jwt-app", scope: "openid api")
        let parts = tokens.accessToken.split(separator: ".").map(String.init)
        let otherSignature = String(other.accessToken.split(separator: ".")[2])
        var claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URLText.decode(parts[1])))) as? [String: Any])
        claims["scope"] = "openid api admin"
        let changedPayload = Base64URLText.encode(Array(try JSONSerialization.data(withJSONObject: claims)))
        let unsignedHeader = Base64URLText.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let forgeries = [
            "\(parts[0]).\(parts[1]).\(otherSignature)", "\(parts[0]).\(changedPayload).\(parts[2])", "\(unsignedHeader).\(parts[1]).",
            "\(parts[0]).\(parts[1]).",
        ]
        for forged in forgeries {
            let live = try await introspection.liveAccessToken(realm: "demo", token: forged)
            XCTAssertNil(live, forged)
            let introspected = try await introspection.introspect(realm: "demo", token: forged)
            XCTAssertFalse(introspected.active, forged)
            let client = try await authenticator.authenticate(realm: "demo", clientID: "jwt-app", secret: nil)
            try await revocation.revoke(client: client, token: forged, metadata: .none)
        }
        let stillLive = try await introspection.liveAccessToken(realm: "demo", token: tokens.accessToken)
        XCTAssertNotNil(stillLive, "no forgery revoked the real token")
    }

    /// Tokens minted before issue 44 were recorded by their jti's hash; during their access
    /// lifetime they are found by it, but only when the realm's key verifies the signature.
    func testARecordByJTIFromBeforeTheUpgradeNeedsAVerifiedSignature() async throws {
        let tokens = try await signIn("jwt-app", scope: "openid api")
        let parts = tokens.accessToken.split(separator: ".").map(String.init)
        let claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URLText.decode(parts[1])))) as? [String: Any])
        let jti = try XCTUnwrap(claims["jti"] as? String)
        _ = try await database.pool.query(
            "UPDATE access_tokens SET token_hash = \(OpaqueToken.hash(jti)) WHERE token_hash = \(OpaqueToken.hash(tokens.accessToken))")
        let legacy = try await introspection.liveAccessToken(realm: "demo", token: tokens.accessToken)
        XCTAssertEqual(legacy?.clientID, "jwt-app")
        let other = try await signIn("jwt-app", scope: "openid api")
        let forged = "\(parts[0]).\(parts[1]).\(other.accessToken.split(separator: ".")[2])"
        let refused = try await introspection.liveAccessToken(realm: "demo", token: forged)
        XCTAssertNil(refused)
        let introspected = try await introspection.introspect(realm: "demo", token: forged)
        XCTAssertFalse(introspected.active)
    }
}
