import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
import ModgudService
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
            XCTAssertEqual((realmAfter["NativeGrants"] as? [String: Any])?["Enabled"] as? Bool, true)

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
        let admin = AdminService(core: core)
        _ = try await admin.createRealm("demo", settings: RealmSettings(hosts: ["localhost"], displayName: "Demo"), metadata: .init())
        try await core.keys.rotate(realm: "demo", now: Date(), metadata: .init())
        let (_, secret) = try await admin.createClient(
            realm: "demo", id: "ops", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["modgud:admin", "api"]),
            metadata: .init())
        let ops = try await core.clientAuthenticator.authenticate(realm: "demo", clientID: "ops", secret: secret)
        let adminToken = try await core.tokenService.clientCredentials(client: ops, scope: "modgud:admin", resources: [], issuer: "https://x", metadata: .init())
        let plainToken = try await core.tokenService.clientCredentials(client: ops, scope: "api", resources: [], issuer: "https://x", metadata: .init())
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
