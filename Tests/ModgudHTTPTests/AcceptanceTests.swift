import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue-level acceptance through HTTP: concurrency, stamps, bad input at every endpoint.
final class AcceptanceTests: XCTestCase {
    static let adminToken = String(repeating: "z", count: 40)
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    struct Setup {
        let database: TestDatabase
        let core: ModgudCore
        let user: User.State
        let serviceSecret: String
    }

    func setUpRealm() async throws -> Setup {
        let database = try await TestDatabase.create(maxConnections: 40)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 4, count: 32))
        let user = try await TestRealm.seed(core)
        let (_, secret) = try await core.administration.clients.create(
            realm: "dev", id: "svc", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]), metadata: .init())
        return Setup(database: database, core: core, user: user, serviceSecret: secret!)
    }

    func signIn(_ setup: Setup) async throws -> TokenResponse {
        try await TestRealm.signIn(setup.core, setup.user)
    }

    func testFiftyConcurrentRefreshesThroughTwoInstancesOneWins() async throws {
        let setup = try await setUpRealm()
        let second = try ModgudCore(pool: setup.database.makePool(maxConnections: 20), masterKey: Array(repeating: 4, count: 32))
        let tokens = try await signIn(setup)
        let body = "grant_type=refresh_token&client_id=app&refresh_token=\(tokens.refreshToken!)"
        let apps = [setup.core, second]
        let outcomes = try await withThrowingTaskGroup(of: [String].self) { group in
            for core in apps {
                group.addTask {
                    try await buildApplication(core: core).test(.router) { client in
                        try await withThrowingTaskGroup(of: String.self) { inner in
                            for _ in 0..<25 {
                                inner.addTask {
                                    let response = try await client.execute(
                                        uri: "/connect/token", method: .post, headers: Self.form, body: ByteBuffer(string: body))
                                    let json = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as! [String: Any]
                                    return response.status == .ok ? "ok" : "\(response.status.code):\(json["error"] as? String ?? "?")"
                                }
                            }
                            return try await inner.reduce(into: [String]()) { $0.append($1) }
                        }
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append(contentsOf: $1) }
        }
        XCTAssertEqual(outcomes.count, 50)
        XCTAssertEqual(outcomes.filter { $0 == "ok" }.count, 1, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0 == "400:invalid_grant" }.count, 49, "the rest: invalid_grant (reuse revoked the family)")
        await second.pool.close()
        await setup.database.drop()
    }

    func testStampRotationsEndRefreshAndReferenceTokensAtOnce() async throws {
        for action in ["logout-everywhere", "disable", "delete"] {
            let setup = try await setUpRealm()
            let tokens = try await signIn(setup)
            let userID = setup.user.id!.uuidString.lowercased()
            let secret = setup.serviceSecret
            try await buildApplication(core: setup.core, configuration: HTTPConfiguration(adminToken: Self.adminToken)).test(.router) { client in
                let done = try await client.execute(
                    uri: "/admin/api/realms/dev/users/\(userID)/\(action)", method: .post, headers: [.authorization: "Bearer \(Self.adminToken)"])
                XCTAssertEqual(done.status, .ok, action)
                let introspect = try await client.execute(
                    uri: "/connect/introspect", method: .post, headers: Self.form,
                    body: ByteBuffer(string: "token=\(tokens.accessToken)&client_id=svc&client_secret=\(secret)"))
                XCTAssertEqual(String(buffer: introspect.body), #"{"active":false}"#, action)
                let refresh = try await client.execute(
                    uri: "/connect/token", method: .post, headers: Self.form,
                    body: ByteBuffer(string: "grant_type=refresh_token&client_id=app&refresh_token=\(tokens.refreshToken!)"))
                XCTAssertEqual(refresh.status, .badRequest, action)
                XCTAssertTrue(String(buffer: refresh.body).contains("invalid_grant"), action)
                let userinfo = try await client.execute(
                    uri: "/connect/userinfo", method: .get, headers: [.authorization: "Bearer \(tokens.accessToken)"])
                XCTAssertEqual(userinfo.status, .unauthorized, action)
            }
            await setup.database.drop()
        }
    }

    func testBadInputAtIntrospectionRevocationAndUserinfoIsA4xx() async throws {
        let setup = try await setUpRealm()
        let before = try await setup.database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        let secret = setup.serviceSecret
        try await buildApplication(core: setup.core).test(.router) { client in
            for path in ["/connect/introspect", "/connect/revoke"] {
                let cases: [(HTTPFields, String, HTTPResponse.Status)] = [
                    ([.contentType: "application/json"], #"{"token":"x"}"#, .badRequest),
                    (Self.form, "token=a&token=b&client_id=svc&client_secret=\(secret)", .badRequest),
                    (Self.form, "token=%G1&client_id=svc&client_secret=\(secret)", .badRequest),
                    (Self.form, "client_id=svc&client_secret=\(secret)", .badRequest),
                    (Self.form, "token=x", .badRequest),
                    (Self.form, "token=x&client_id=svc&client_secret=wrong", .unauthorized),
                    (Self.form, "token=" + String(repeating: "x", count: 70_000), .contentTooLarge),
                ]
                for (headers, body, status) in cases {
                    let response = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
                    XCTAssertEqual(response.status, status, "\(path) \(body.prefix(60))")
                }
            }
            for header in ["Bearer", "Basic abc", "Bearer " + String(repeating: "y", count: 5000)] {
                let response = try await client.execute(uri: "/connect/userinfo", method: .get, headers: [.authorization: header])
                XCTAssertEqual(response.status, .unauthorized, header.prefix(20).description)
            }
        }
        let after = try await setup.database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        XCTAssertEqual(after, before, "nothing written")
        await setup.database.drop()
    }
}
