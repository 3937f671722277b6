import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class AdminAPITests: XCTestCase {
    static let adminToken = String(repeating: "a", count: 40)
    static let adminHeaders: HTTPFields = [.authorization: "Bearer \(adminToken)", .contentType: "application/json"]

    func testAdminAPIAuthenticationValidationAndStrictJSON() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 9, count: 32))
        let app = buildApplication(core: core, configuration: HTTPConfiguration(adminToken: Self.adminToken))
        try await app.test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil, headers: HTTPFields = AdminAPITests.adminHeaders) async throws -> (HTTPResponse.Status, [String: Any]) {
                let response = try await client.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
                return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:])
            }
            let (unauthorized, problem) = try await call(.get, "/admin/api/realms/demo", headers: [:])
            XCTAssertEqual(unauthorized, .unauthorized)
            XCTAssertEqual(problem["title"] as? String, "Admin.Unauthorized")

            let (created, realm) = try await call(.post, "/admin/api/realms", #"{"Id":"demo","Hosts":["login.demo.test"],"DisplayName":"Demo"}"#)
            XCTAssertEqual(created, .created)
            XCTAssertEqual(realm["Hosts"] as? [String], ["login.demo.test"])

            let invalid: [(String, String)] = [
                (#"{"Id":"x","Hosts":["a.test"],"Colour":"red"}"#, "Request.UnknownMember"),
                (#"{"Id":"x","Hosts":["a.test""#, "Request.MalformedJSON"),
                (#"[1,2]"#, "Request.MalformedJSON"),
                (#"{"Id":"x","Hosts":"a.test"}"#, "Request.Invalid"),
                (#"{"Id":"x","Hosts":["a.test"],"NativeGrants":{"AccessTokenLifetimeMinutes":0}}"#, "NativeGrants.InvalidAccessTokenLifetime"),
                (#"{"Id":"other","Hosts":["login.demo.test"]}"#, "Realm.HostTaken"),
            ]
            for (body, title) in invalid {
                let (status, problem) = try await call(.post, "/admin/api/realms", body)
                XCTAssertTrue(status == .badRequest || status == .conflict, "\(body): \(status)")
                XCTAssertEqual(problem["title"] as? String, title, body)
            }
            let (patched, realmAfter) = try await call(.patch, "/admin/api/realms/demo", #"{"NativeGrants":{"Enabled":true}}"#)
            XCTAssertEqual(patched, .ok)
            XCTAssertEqual(((realmAfter["Realm"] as? [String: Any])?["NativeGrants"] as? [String: Any])?["Enabled"] as? Bool, true)

            let (clientCreated, clientBody) = try await call(
                .post, "/admin/api/realms/demo/clients",
                #"{"Id":"ops","Type":"confidential","Grants":["client_credentials"],"Scopes":["modgud:admin"]}"#)
            XCTAssertEqual(clientCreated, .created)
            let secret = try XCTUnwrap(clientBody["Secret"] as? String)
            XCTAssertEqual(secret.count, 43, "a 256-bit secret, shown once")
            let (mixed, mixedProblem) = try await call(
                .post, "/admin/api/realms/demo/clients", #"{"Id":"bad","Type":"public","Grants":["client_credentials","urn:cocoar:otp"],"Scopes":[]}"#)
            XCTAssertEqual(mixed, .badRequest)
            XCTAssertEqual(mixedProblem["title"] as? String, "Client.MixedGrants")
            let (missing, _) = try await call(.get, "/admin/api/realms/demo/clients/nobody")
            XCTAssertEqual(missing, .notFound)

            let rows = try await database.pool.query("SELECT count(*) FROM events WHERE type = 'realm.created'").first!.decode(Int.self, at: 0)
            XCTAssertEqual(rows, 1, "refused requests wrote nothing")
        }
        await database.drop()
    }

    func testScopedClientTokenAdministersItsRealmOnly() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 9, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("demo", settings: RealmSettings(hosts: ["localhost"], displayName: "Demo"), metadata: .init())
        try await core.keys.rotate(realm: "demo", now: Date(), metadata: .init())
        let (_, secret) = try await admin.clients.create(
            realm: "demo", id: "ops", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["modgud:admin", "api"]),
            metadata: .init())
        let ops = try await core.clientAuthenticator.authenticate(realm: "demo", clientID: "ops", secret: secret)
        let adminToken = try await core.clientCredentials.clientCredentials(client: ops, scope: "modgud:admin", resources: [], issuer: "https://x", metadata: .init())
        let plainToken = try await core.clientCredentials.clientCredentials(client: ops, scope: "api", resources: [], issuer: "https://x", metadata: .init())
        try await buildApplication(core: core, configuration: HTTPConfiguration(adminToken: Self.adminToken)).test(.router) { client in
            let ok = try await client.execute(uri: "/admin/api/realms/demo/clients", method: .get, headers: [.authorization: "Bearer \(adminToken.accessToken)"])
            XCTAssertEqual(ok.status, .ok)
            let forbidden = try await client.execute(uri: "/admin/api/realms/demo/clients", method: .get, headers: [.authorization: "Bearer \(plainToken.accessToken)"])
            XCTAssertEqual(forbidden.status, .forbidden)
            let create = try await client.execute(
                uri: "/admin/api/realms", method: .post, headers: [.authorization: "Bearer \(adminToken.accessToken)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"Id":"new","Hosts":["n.test"]}"#))
            XCTAssertEqual(create.status, .forbidden, "only the bootstrap token creates realms")
            let elsewhere = try await client.execute(uri: "/admin/api/realms/other/clients", method: .get, headers: [.authorization: "Bearer \(adminToken.accessToken)"])
            XCTAssertEqual(elsewhere.status, .unauthorized, "a token counts only in its realm")
        }
        await database.drop()
    }
}

/// Issue 11: operators set what the realm enforces through the admin API.
final class RealmSettingsAdminTests: XCTestCase {
    static let headers: HTTPFields = [.authorization: "Bearer \(AdminAPITests.adminToken)", .contentType: "application/json"]

    /// Issue 41: an RS256 realm from its creation; a rotated-out key retired (forced inside its
    /// overlap), gone from the JWKS, its private key destroyed.
    func testSigningKeysChosenAtCreationRotatedAndRetired() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 9, count: 32))
        try await buildApplication(core: core, configuration: HTTPConfiguration(adminToken: AdminAPITests.adminToken)).test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil) async throws -> (HTTPResponse.Status, [String: Any]) {
                let response = try await client.execute(uri: path, method: method, headers: Self.headers, body: body.map { ByteBuffer(string: $0) })
                return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:])
            }
            func jwks() async throws -> [String] {
                let response = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
                let keys = (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["keys"] as? [[String: Any]]
                return (keys ?? []).compactMap { $0["kty"] as? String }.sorted()
            }
            let (refused, problem) = try await call(.post, "/admin/api/realms", #"{"Id":"acme","Hosts":["localhost"],"SigningAlgorithm":"HS256"}"#)
            XCTAssertEqual(refused, .badRequest)
            XCTAssertEqual(problem["title"] as? String, "SigningKey.UnsupportedAlgorithm")
            let (created, realm) = try await call(.post, "/admin/api/realms", #"{"Id":"acme","Hosts":["localhost"],"SigningAlgorithm":"RS256"}"#)
            XCTAssertEqual(created, .created)
            let first = try XCTUnwrap((realm["SigningKeys"] as? [[String: Any]])?.first)
            XCTAssertEqual(first["Algorithm"] as? String, "RS256")
            XCTAssertEqual(first["Status"] as? String, "active")
            let kid = try XCTUnwrap(first["Kid"] as? String)
            let initialKeys = try await jwks()
            XCTAssertEqual(initialKeys, ["RSA"])
            let (patchAlgorithm, _) = try await call(.patch, "/admin/api/realms/acme", #"{"SigningAlgorithm":"ES256"}"#)
            XCTAssertEqual(patchAlgorithm, .badRequest, "the algorithm is chosen at creation; later keys by rotation")

            let (rotated, newKey) = try await call(.post, "/admin/api/realms/acme/signing-keys", #"{"Algorithm":"ES256"}"#)
            XCTAssertEqual(rotated, .created)
            XCTAssertEqual(newKey["Status"] as? String, "active")
            let rotatedKeys = try await jwks()
            XCTAssertEqual(rotatedKeys, ["EC", "RSA"])
            let (_, shown) = try await call(.get, "/admin/api/realms/acme")
            let published = try XCTUnwrap((shown["SigningKeys"] as? [[String: Any]])?.first { $0["Kid"] as? String == kid })
            XCTAssertEqual(published["Status"] as? String, "published")
            XCTAssertNotNil(published["RetirableAt"])

            let (early, overlap) = try await call(.post, "/admin/api/realms/acme/signing-keys/\(kid)/retire", "{}")
            XCTAssertEqual(early, .badRequest)
            XCTAssertEqual(overlap["title"] as? String, "SigningKey.InOverlap")
            let (active, activeProblem) = try await call(.post, "/admin/api/realms/acme/signing-keys/\(newKey["Kid"] as? String ?? "")/retire", #"{"Force":true}"#)
            XCTAssertEqual(active, .badRequest)
            XCTAssertEqual(activeProblem["title"] as? String, "SigningKey.Active")
            let (forced, retired) = try await call(.post, "/admin/api/realms/acme/signing-keys/\(kid)/retire", #"{"Force":true}"#)
            XCTAssertEqual(forced, .ok)
            XCTAssertEqual(retired["RetiredNow"] as? Bool, true)
            XCTAssertEqual((retired["Key"] as? [String: Any])?["Status"] as? String, "retired")
            let retiredKeys = try await jwks()
            XCTAssertEqual(retiredKeys, ["EC"])
            let secrets = try await database.pool.query("SELECT count(*) FROM signing_key_secrets WHERE kid = \(kid)").first!.decode(Int.self, at: 0)
            XCTAssertEqual(secrets, 0, "the retired private key is destroyed")
            let (missing, _) = try await call(.post, "/admin/api/realms/acme/signing-keys/nope/retire", "{}")
            XCTAssertEqual(missing, .notFound)
        }
        await database.drop()
    }

    func testRegistrationFieldsAndRateLimitsAreSetValidatedAndShownWithTheirDefaults() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 9, count: 32))
        _ = try await core.administration.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true)),
            metadata: .init())
        let app = buildApplication(core: core, configuration: HTTPConfiguration(adminToken: AdminAPITests.adminToken))
        try await app.test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil) async throws -> (HTTPResponse.Status, [String: Any]) {
                let response = try await client.execute(uri: path, method: method, headers: Self.headers, body: body.map { ByteBuffer(string: $0) })
                return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:])
            }
            let events = { try await database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0) }
            let before = try await events()
            for (body, title) in [
                (#"{"RegistrationFields":{"Phone":"Required"}}"#, "Realm.UnknownRegistrationField"),
                (#"{"RegistrationFields":{"Firstname":"Sometimes"}}"#, "Realm.InvalidFieldRequirement"),
                (#"{"RateLimits":{"token.nope":{"Limit":1,"WindowSeconds":60}}}"#, "RateLimit.UnknownPolicy"),
                (#"{"RateLimits":{"token.ip":{"Limit":0,"WindowSeconds":60}}}"#, "RateLimit.Invalid"),
                (#"{"DisplayName":"Changed","RateLimits":{"token.ip":{"Limit":0,"WindowSeconds":60}}}"#, "RateLimit.Invalid"),
            ] {
                let (status, problem) = try await call(.patch, "/admin/api/realms/dev", body)
                XCTAssertEqual(status, .badRequest, body)
                XCTAssertEqual(problem["title"] as? String, title, body)
            }
            let afterRefusals = try await events()
            XCTAssertEqual(afterRefusals, before, "a refused patch writes nothing, not even its valid members")

            let (patched, _) = try await call(
                .patch, "/admin/api/realms/dev",
                #"{"RegistrationFields":{"Firstname":"Required","Lastname":"Optional"},"RateLimits":{"token.client":{"Limit":6000,"WindowSeconds":60,"Burst":600}}}"#)
            XCTAssertEqual(patched, .ok)
            let (_, realm) = try await call(.get, "/admin/api/realms/dev")
            XCTAssertEqual(
                realm["RegistrationFields"] as? [String: String], ["Email": "Required", "Username": "Off", "Firstname": "Required", "Lastname": "Optional"])
            let limits = try XCTUnwrap(realm["RateLimits"] as? [String: [String: Any]])
            XCTAssertEqual(Set(limits.keys), Set(RateLimitPolicy.all.map(\.name)), "every policy, defaults included")
            XCTAssertEqual(limits["token.client"]?["Limit"] as? Int, 6000)
            XCTAssertEqual(limits["token.client"]?["Burst"] as? Int, 600)
            XCTAssertEqual(limits["token.client"]?["Default"] as? Bool, false)
            XCTAssertEqual(limits["otp-request.ip"]?["Limit"] as? Int, 1200)
            XCTAssertEqual(limits["otp-request.ip"]?["WindowSeconds"] as? Int, 3600)
            XCTAssertEqual(limits["otp-request.ip"]?["Default"] as? Bool, true)

            // Enforced: the sign-in endpoints now require a first name.
            let request = try await client.execute(
                uri: "/api/account/native/otp/request", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"Email":"ada@example.com"}"#))
            XCTAssertEqual(request.status, .badRequest)
            XCTAssertEqual(String(buffer: request.body), #"{"error":"Firstname is required."}"#)

            let (restored, _) = try await call(.patch, "/admin/api/realms/dev", #"{"RateLimits":{"token.client":null}}"#)
            XCTAssertEqual(restored, .ok)
            let (_, again) = try await call(.get, "/admin/api/realms/dev")
            let restoredLimit = (again["RateLimits"] as? [String: [String: Any]])?["token.client"]
            XCTAssertEqual(restoredLimit?["Default"] as? Bool, true)
        }
        await database.drop()
    }

    func testChangingThePrimaryDomainWarnsWithThePasskeysAndClientsAffected() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 9, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", primaryDomain: "acme.test", nativeGrants: NativeGrantSettings(enabled: true)),
            metadata: .init())
        _ = try await admin.clients.create(
            realm: "dev", id: "app", settings: ClientSettings(type: .public, grants: [.passkey], allowedScopes: ["openid"]), metadata: .init())
        _ = try await admin.clients.create(
            realm: "dev", id: "ios", settings: ClientSettings(type: .public, grants: [.passkey], allowedScopes: ["openid"], rpID: "ios.acme.test"),
            metadata: .init())
        for (index, rpID) in ["acme.test", "acme.test", "ios.acme.test"].enumerated() {
            let id = UUID()
            _ = try await core.passkeyActors.actor(for: StreamNames.passkey(realm: "dev", passkeyID: id)).execute(
                .enroll(
                    PasskeyEnrolled(
                        passkeyID: id, userID: UUID(), credentialID: "Y3JlZC0\(index)", rpID: rpID, publicKey: "cGs", algorithm: -7, signCount: 0,
                        aaguid: "AA", backupEligible: false, backedUp: false, transports: [], attestationFormat: "none", displayName: .plain("Key"),
                        clientID: "app", createdAt: Date())), now: Date(), metadata: .init())
        }
        try await buildApplication(core: core, configuration: HTTPConfiguration(adminToken: AdminAPITests.adminToken)).test(.router) { client in
            let response = try await client.execute(
                uri: "/admin/api/realms/dev", method: .patch, headers: Self.headers, body: ByteBuffer(string: #"{"PrimaryDomain":"new.test"}"#))
            XCTAssertEqual(response.status, .ok)
            let body = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
            let warning = try XCTUnwrap(body["Warning"] as? String)
            XCTAssertTrue(warning.contains("from acme.test to new.test"), warning)
            XCTAssertTrue(warning.contains("2 passkey(s)"), warning)
            XCTAssertTrue(warning.contains(": app)"), "names the clients without their own RP-ID, not ios: \(warning)")
            let unchanged = try await client.execute(
                uri: "/admin/api/realms/dev", method: .patch, headers: Self.headers, body: ByteBuffer(string: #"{"DisplayName":"Dev 2"}"#))
            let quiet = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(buffer: unchanged.body)) as? [String: Any])
            XCTAssertNil(quiet["Warning"], "no warning when the domain stays")
        }
        await database.drop()
    }
}
