import AsyncTestSupport
import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// Through HTTP, in process, on the production router and a real PostgreSQL.
final class TokenEndpointTests: XCTestCase {
    var database: TestDatabase!
    var core: ModgudCore!
    var serviceSecret = ""
    var user: User.State!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let settings = RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: false))
        _ = try await core.realmActors.actor(for: StreamNames.realm("dev")).execute(.create(id: "dev", settings: settings), now: Date(), metadata: .none)
        try await core.keys.rotate(realm: "dev", now: Date(), metadata: .none)
        try await register("app", ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "email", "offline_access"]))
        let (secret, hash) = ClientAuthenticator.generateSecret()
        serviceSecret = secret
        try await register("svc", ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]), secretHash: hash)
        let id = try await core.administration.users.create(realm: "dev", email: "ada@example.com", firstName: "Ada", metadata: .init()).id
        user = try await core.administration.users.state(realm: "dev", id: id)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func register(_ id: String, _ settings: ClientSettings, secretHash: String? = nil) async throws {
        _ = try await core.realmActors.actor(for: StreamNames.realm("dev")).current()
        _ = try await core.clientActors.actor(for: StreamNames.client(realm: "dev", clientID: id))
            .execute(.register(id: id, settings: settings, secretHash: secretHash), now: Date(), metadata: .none)
    }

    /// A sign-in the way the passwordless grants will do it (they land in later issues).
    func signIn() async throws -> TokenResponse {
        let client = try await core.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)
        return try await core.tokenService.signIn(
            client: client, user: user, grantType: .otp, scope: "openid email offline_access", resources: [], amr: ["otp"],
            issuer: "https://localhost", metadata: .none)
    }

    var app: some ApplicationProtocol {
        buildApplication(core: core, configuration: HTTPConfiguration(issuerScheme: "https"))
    }

    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    static func post(_ client: some TestClientProtocol, _ path: String, _ body: String, headers: HTTPFields = form) async throws -> (TestResponse, [String: Any]) {
        let response = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
        return (response, json)
    }

    func testRefreshOverHTTPRotatesAndReplayRevokesTheFamily() async throws {
        let tokens = try await signIn()
        let serviceSecret = self.serviceSecret
        try await app.test(.router) { client in
            let (first, body) = try await Self.post(client, "/connect/token", "grant_type=refresh_token&client_id=app&refresh_token=\(tokens.refreshToken!)")
            XCTAssertEqual(first.status, .ok)
            XCTAssertEqual(first.headers[.cacheControl], "no-store")
            XCTAssertNil(first.headers[.setCookie], "no cookie, ever")
            XCTAssertEqual(body["token_type"] as? String, "Bearer")
            XCTAssertEqual(body["expires_in"] as? Int, 900)
            let newRefresh = try XCTUnwrap(body["refresh_token"] as? String)
            XCTAssertNotNil(body["id_token"])

            let (replay, replayBody) = try await Self.post(client, "/connect/token", "grant_type=refresh_token&client_id=app&refresh_token=\(tokens.refreshToken!)")
            XCTAssertEqual(replay.status, .badRequest)
            XCTAssertEqual(replayBody["error"] as? String, "invalid_grant")
            let (newest, newestBody) = try await Self.post(client, "/connect/token", "grant_type=refresh_token&client_id=app&refresh_token=\(newRefresh)")
            XCTAssertEqual(newest.status, .badRequest)
            XCTAssertEqual(newestBody["error"] as? String, "invalid_grant", "the whole family died")

            let basic = "Basic " + Data("svc:\(serviceSecret)".utf8).base64EncodedString()
            var headers = Self.form
            headers[.authorization] = basic
            let (_, introspection) = try await Self.post(client, "/connect/introspect", "token=\(body["access_token"] as! String)", headers: headers)
            XCTAssertEqual(introspection["active"] as? Bool, false)
            XCTAssertEqual(introspection.count, 1, "inactive tokens reveal nothing else")
        }
    }

    func testDiscoveryAndJWKSVerifyIssuedTokens() async throws {
        let tokens = try await signIn()
        try await app.test(.router) { client in
            let discovery = try await client.execute(uri: "/.well-known/openid-configuration", method: .get)
            let metadata = try JSONSerialization.jsonObject(with: Data(buffer: discovery.body)) as! [String: Any]
            XCTAssertEqual(metadata["issuer"] as? String, "https://localhost")
            XCTAssertEqual(metadata["jwks_uri"] as? String, "https://localhost/.well-known/jwks.json")
            XCTAssertEqual(metadata["grant_types_supported"] as? [String], ["refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"], "native URNs only when enabled")
            XCTAssertNil(metadata["authorization_challenge_endpoint"], "issue 45: listed only with the native grants on")
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
            let keys = try await JWTKeyCollection().add(jwksJSON: String(buffer: jwks.body))
            let claims = try await keys.verify(tokens.idToken!, as: IDTokenClaims.self)
            XCTAssertEqual(claims.iss.value, metadata["issuer"] as? String)
        }
        var settings = RealmSettings(hosts: ["localhost"], displayName: "Dev")
        settings.nativeGrants.enabled = true
        _ = try await core.realmActors.actor(for: StreamNames.realm("dev")).execute(.changeSettings(settings), now: Date(), metadata: .none)
        let fresh = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))  // a new instance: no cached realm
        try await buildApplication(core: fresh).test(.router) { client in
            let discovery = try await client.execute(uri: "/.well-known/openid-configuration", method: .get)
            let metadata = try JSONSerialization.jsonObject(with: Data(buffer: discovery.body)) as! [String: Any]
            XCTAssertEqual(
                metadata["grant_types_supported"] as? [String],
                [
                    "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "authorization_code", "http://auth0.com/oauth/grant-type/passwordless/otp", "urn:cocoar:magic", "urn:cocoar:otp",
                    "urn:cocoar:passkey", "urn:ietf:params:oauth:grant-type:token-exchange", "urn:modgud:recovery-code",
                    "urn:okta:params:oauth:grant-type:webauthn",
                ])
            // Issue 46: the acr values tokens carry, weakest first.
            XCTAssertEqual(
                metadata["acr_values_supported"] as? [String], ["urn:modgud:acr:recovery", "urn:modgud:acr:single-factor", "urn:modgud:acr:mfa"])
            XCTAssertEqual(metadata["authorization_challenge_endpoint"] as? String, "https://localhost/connect/authorization-challenge")
            XCTAssertEqual(metadata["code_challenge_methods_supported"] as? [String], ["S256"])
        }
    }

    func testClientAuthenticationFailures() async throws {
        let serviceSecret = self.serviceSecret
        try await app.test(.router) { client in
            var wrong = Self.form
            wrong[.authorization] = "Basic " + Data("svc:wrong".utf8).base64EncodedString()
            let (response, body) = try await Self.post(client, "/connect/token", "grant_type=client_credentials", headers: wrong)
            XCTAssertEqual(response.status, .unauthorized)
            XCTAssertEqual(body["error"] as? String, "invalid_client")
            XCTAssertNotNil(response.headers[.wwwAuthenticate])
            let (unknown, unknownBody) = try await Self.post(client, "/connect/token", "grant_type=refresh_token&client_id=nobody&refresh_token=x")
            XCTAssertEqual(unknownBody["error"] as? String, "invalid_client")
            XCTAssertEqual(unknown.status, .badRequest)
            let (ok, okBody) = try await Self.post(client, "/connect/token", "grant_type=client_credentials&client_id=svc&client_secret=\(serviceSecret)&scope=api")
            XCTAssertEqual(ok.status, .ok)
            XCTAssertNil(okBody["refresh_token"])
            XCTAssertEqual(okBody["scope"] as? String, "api")
        }
        _ = try await core.clientActors.actor(for: StreamNames.client(realm: "dev", clientID: "app")).execute(.disable, now: Date(), metadata: .none)
        try await app.test(.router) { client in
            let (_, body) = try await Self.post(client, "/connect/token", "grant_type=refresh_token&client_id=app&refresh_token=x")
            XCTAssertEqual(body["error"] as? String, "invalid_grant")
            XCTAssertEqual(body["error_description"] as? String, "The OAuth client is disabled.")
        }
    }

    func testBadInputGetsTheDocumentedErrorAndWritesNothing() async throws {
        let before = try await database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        try await app.test(.router) { client in
            let cases: [(String, HTTPFields, String)] = [
                ("client_id=app", Self.form, "invalid_request"),  // no grant_type
                ("grant_type=refresh_token&grant_type=refresh_token&client_id=app&refresh_token=x", Self.form, "invalid_request"),
                ("grant_type=refresh_token&client_id=app&refresh_token=%zz", Self.form, "invalid_request"),
                ("grant_type=refresh_token&client_id=app", Self.form, "invalid_request"),  // no refresh_token
                ("{\"grant_type\":\"refresh_token\"}", [.contentType: "application/json"], "invalid_request"),
                ("grant_type=password&client_id=app", Self.form, "unsupported_grant_type"),
                ("grant_type=urn:cocoar:otp&client_id=app", Self.form, "unsupported_grant_type"),  // realm flag off
            ]
            for (body, headers, error) in cases {
                let (response, json) = try await Self.post(client, "/connect/token", body, headers: headers)
                XCTAssertEqual(response.status, .badRequest, body)
                XCTAssertEqual(json["error"] as? String, error, body)
                XCTAssertEqual(response.headers[.cacheControl], "no-store")
            }
            let huge = "grant_type=refresh_token&client_id=app&refresh_token=" + String(repeating: "a", count: 70_000)
            let (tooLarge, _) = try await Self.post(client, "/connect/token", huge)
            XCTAssertEqual(tooLarge.status, .contentTooLarge)
        }
        let after = try await database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        XCTAssertEqual(after, before, "nothing written")
    }

    func testNativeGrantOptInsAreCheckedInOrder() async throws {
        var settings = RealmSettings(hosts: ["localhost"], displayName: "Dev")
        settings.nativeGrants.enabled = true
        _ = try await core.realmActors.actor(for: StreamNames.realm("dev")).execute(.changeSettings(settings), now: Date(), metadata: .none)
        let fresh = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        try await buildApplication(core: fresh).test(.router) { client in
            let (_, body) = try await Self.post(client, "/connect/token", "grant_type=urn:cocoar:passkey&client_id=app")
            XCTAssertEqual(body["error"] as? String, "unauthorized_client", "the realm allows it, the client lacks the permission")
        }
    }

    func testUserInfoFollowsTheTokenAndItsScopes() async throws {
        let tokens = try await signIn()
        let subject = user.id!.uuidString.lowercased()
        try await app.test(.router) { client in
            let ok = try await client.execute(uri: "/connect/userinfo", method: .get, headers: [.authorization: "Bearer \(tokens.accessToken)"])
            XCTAssertEqual(ok.status, .ok)
            let claims = try JSONSerialization.jsonObject(with: Data(buffer: ok.body)) as! [String: Any]
            XCTAssertEqual(claims["sub"] as? String, subject)
            XCTAssertEqual(claims["email"] as? String, "ada@example.com")
            XCTAssertNil(claims["given_name"], "no profile scope, no names")
            let missing = try await client.execute(uri: "/connect/userinfo", method: .get)
            XCTAssertEqual(missing.status, .unauthorized)
            XCTAssertEqual(missing.headers[values: .wwwAuthenticate].first, #"Bearer realm="modgud""#, "RFC 6750, and DPoP beside it")
            let bad = try await client.execute(uri: "/connect/userinfo", method: .post, headers: [.authorization: "Bearer nope"])
            XCTAssertEqual(bad.status, .unauthorized)
            XCTAssertEqual(bad.headers[.wwwAuthenticate], #"Bearer realm="modgud", error="invalid_token""#)
        }
    }

    func testUnknownHostIsAProblemNotFound() async throws {
        var settings = RealmSettings(hosts: ["login.example.com"], displayName: "Dev")
        settings.nativeGrants.enabled = false
        _ = try await core.realmActors.actor(for: StreamNames.realm("dev")).execute(.changeSettings(settings), now: Date(), metadata: .none)
        let fresh = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        try await buildApplication(core: fresh).test(.router) { client in
            let response = try await client.execute(uri: "/.well-known/openid-configuration", method: .get)
            XCTAssertEqual(response.status, .notFound)
            XCTAssertEqual(response.headers[.contentType], "application/problem+json")
            let problem = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as! [String: Any]
            XCTAssertEqual(problem["title"] as? String, "Realm.NotFound")
        }
    }
}

/// Two instances (two applications on one database, each with its own actors and caches).
final class TwoInstanceTests: XCTestCase {
    func testTwoInstancesNeverDoubleSpendARefreshToken() async throws {
        let database = try await TestDatabase.create(maxConnections: 40)
        let first = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let second = try ModgudCore(pool: database.makePool(maxConnections: 20), masterKey: Array(repeating: 3, count: 32))
        let admin = first.administration
        // The flag on, for the client's native grant (issue 65, item 7).
        _ = try await admin.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true)), metadata: .init())
        try await first.keys.rotate(realm: "dev", now: Date(), metadata: .init())
        _ = try await admin.clients.create(
            realm: "dev", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["offline_access"]),
            metadata: .init())
        let id = try await first.administration.users.create(realm: "dev", email: "ada@example.com", metadata: .init()).id
        let user = try await first.administration.users.state(realm: "dev", id: id)
        let app = try await first.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)
        let tokens = try await first.tokenService.signIn(
            client: app, user: user, grantType: .otp, scope: "offline_access", resources: [], amr: ["otp"], issuer: "https://localhost", metadata: .init())
        let body = "grant_type=refresh_token&client_id=app&refresh_token=\(tokens.refreshToken!)"
        let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
            for core in [first, second] {
                group.addTask {
                    try await buildApplication(core: core).test(.router) { client in
                        try await client.execute(
                            uri: "/connect/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                            body: ByteBuffer(string: body)
                        ).status
                    }
                }
            }
            return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses.filter { $0 == .ok }.count, 1, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == .badRequest }.count, 1, "\(statuses)")
        await second.pool.close()
        await database.drop()
    }

    /// Issue 41: signing keys rotated and retired on two instances, alternating: each change
    /// holds on the other instance as soon as it is answered (the JWKS it serves, and whether
    /// it can sign with the retired key), by NOTIFY, with hour-long caches.
    func testKeysRotatedAndRetiredAlternatelyHoldOnBothInstances() async throws {
        let database = try await TestDatabase.create(maxConnections: 40)
        let pools = [database.pool, database.makePool(maxConnections: 10)]
        let cores = try pools.map { try ModgudCore(pool: $0, masterKey: Array(repeating: 3, count: 32), settingsMaxAge: .seconds(3600)) }
        let listeners = try await SettingsListeners.start(pools, cores)
        func kids(_ core: ModgudCore) async throws -> Set<String> {
            let document = try await core.keys.jwks(realm: "dev")
            let keys = (try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])?["keys"] as? [[String: Any]] ?? []
            return Set(keys.compactMap { $0["kid"] as? String })
        }
        let (a, b) = (cores[0].administration, cores[1].administration)
        _ = try await a.realms.create("dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev"), signingAlgorithm: .es256, metadata: .init())
        let created = try await a.realms.get("dev")
        let first = try XCTUnwrap(created.activeKey?.kid)
        let seenByB = try await kids(cores[1])
        XCTAssertEqual(seenByB, [first], "B holds the JWKS now (for an hour without a notification)")
        let second = try await b.realms.rotateSigningKey(realm: "dev", algorithm: .rs256, metadata: .init())
        let seenByA = try await kids(cores[0])
        XCTAssertEqual(seenByA, [first, second], "A serves B's new key once B answered")
        let retired = try await a.realms.retireSigningKey(realm: "dev", kid: first, force: true, metadata: .init())
        XCTAssertTrue(retired)
        let afterRetire = try await kids(cores[1])
        XCTAssertEqual(afterRetire, [second], "B stops serving the key A retired once A answered")
        let retiredAgain = try await b.realms.retireSigningKey(realm: "dev", kid: first, force: true, metadata: .init())
        XCTAssertFalse(retiredAgain, "B sees it retired already: nothing written twice")
        struct Claims: JWTPayload { var sub: SubjectClaim; func verify(using algorithm: some JWTAlgorithm) throws {} }
        for core in cores {
            let token = try await core.keys.sign(Claims(sub: .init(value: "x")), realm: "dev")
            let header = try XCTUnwrap(Data(base64Encoded: String(token.split(separator: ".")[0]).base64Padded))
            XCTAssertTrue(String(decoding: header, as: UTF8.self).contains(second), "both instances sign with the active key")
        }
        for listener in listeners { listener.cancel() }
        await pools[1].close()
        await database.drop()
    }

    func testRevocationEndpointAnswers200AndRevokes() async throws {
        let database = try await TestDatabase.create(maxConnections: 20)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev"), metadata: .init())
        try await core.keys.rotate(realm: "dev", now: Date(), metadata: .init())
        let (_, secret) = try await admin.clients.create(
            realm: "dev", id: "svc", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]), metadata: .init())
        let svc = try await core.clientAuthenticator.authenticate(realm: "dev", clientID: "svc", secret: secret)
        let token = try await core.clientCredentials.clientCredentials(client: svc, scope: "api", resources: [], issuer: "https://localhost", metadata: .init())
        let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        try await buildApplication(core: core).test(.router) { client in
            let unknown = try await client.execute(
                uri: "/connect/revoke", method: .post, headers: form, body: ByteBuffer(string: "token=never-issued&client_id=svc&client_secret=\(secret!)"))
            XCTAssertEqual(unknown.status, .ok, "RFC 7009: unknown tokens are not an error")
            let revoke = try await client.execute(
                uri: "/connect/revoke", method: .post, headers: form, body: ByteBuffer(string: "token=\(token.accessToken)&client_id=svc&client_secret=\(secret!)"))
            XCTAssertEqual(revoke.status, .ok)
            let introspect = try await client.execute(
                uri: "/connect/introspect", method: .post, headers: form, body: ByteBuffer(string: "token=\(token.accessToken)&client_id=svc&client_secret=\(secret!)"))
            XCTAssertEqual(String(buffer: introspect.body), #"{"active":false}"#)
            let publicIntrospection = try await client.execute(
                uri: "/connect/introspect", method: .post, headers: form, body: ByteBuffer(string: "token=x&client_id=svc"))
            XCTAssertEqual(publicIntrospection.status, .unauthorized, "introspection requires client authentication")
        }
        await database.drop()
    }
}

extension String {
    /// Base64url as standard base64 with padding (a JWT segment for `Data(base64Encoded:)`).
    fileprivate var base64Padded: String {
        var text = replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return text
    }
}

