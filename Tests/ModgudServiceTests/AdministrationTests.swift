import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class AdministrationTests: XCTestCase {
    func testAdministrationAndAudit() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 5, count: 32))
        let admin = core.administration
        let metadata = EventMetadata(actor: "admin:test", clientIP: "198.51.100.7")
        _ = try await admin.realms.create("demo", settings: demoSettings, metadata: metadata)
        try await core.keys.rotate(realm: "demo", now: now, metadata: metadata)
        do {
            _ = try await admin.realms.create("demo", settings: demoSettings, metadata: metadata)
            XCTFail("exists")
        } catch let error as ServiceRefusal {
            XCTAssertEqual(error.code, "Realm.AlreadyExists")
            XCTAssertEqual(error.kind, .conflict, "the kind the domain raised it with")
        }
        let realm = try await admin.realms.update("demo", metadata: metadata) {
            $0.nativeGrants.accessTokenLifetimeMinutes = 30
            $0.nativeGrants.enabled = true
        }
        XCTAssertEqual(realm.state.settings?.nativeGrants.accessTokenLifetimeMinutes, 30)

        let (_, secret) = try await admin.clients.create(
            realm: "demo", id: "svc", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]),
            metadata: metadata)
        XCTAssertNotNil(secret)
        let stored = try await database.pool.query("SELECT secret_hash FROM clients WHERE client_id = 'svc'").first!.decode(String.self, at: 0)
        XCTAssertNotEqual(stored, secret, "only the hash is stored")
        let (_, none) = try await admin.clients.create(
            realm: "demo", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"], rpID: "a.demo.test"),
            metadata: metadata)
        XCTAssertNil(none)
        // Issue 65, item 7: with the realm's native grants off, the held grant stays (inert) and
        // the client's other settings change; a new native grant is refused, naming the setting.
        _ = try await admin.realms.update("demo", metadata: metadata) { $0.nativeGrants.enabled = false }
        let inert = try await admin.clients.inertNativeGrants(realm: "demo")
        XCTAssertEqual(inert.map(\.id), ["app"])
        XCTAssertEqual(inert.first?.grants, [.otp])
        for attempt in [
            { _ = try await admin.clients.update(realm: "demo", id: "app", metadata: metadata) { $0.grants.insert(.magic) } },
            { _ = try await admin.clients.create(realm: "demo", id: "new", settings: ClientSettings(type: .public, grants: [.passkey], allowedScopes: []), metadata: metadata) },
        ] as [() async throws -> Void] {
            do {
                try await attempt()
                XCTFail("a native grant while the realm's flag is off")
            } catch let error as ServiceRefusal {
                XCTAssertEqual(error.code, "Client.NativeGrantsDisabled")
                XCTAssertEqual(error.kind, .invalid)
                XCTAssertTrue(error.message.contains("NativeGrants.Enabled") && error.message.contains("--native-grants true"), error.message)
            }
        }
        let rotated = try await admin.clients.rotateSecret(realm: "demo", id: "svc", metadata: metadata)
        _ = try await core.clientAuthenticator.authenticate(realm: "demo", clientID: "svc", secret: rotated)
        do {
            _ = try await core.clientAuthenticator.authenticate(realm: "demo", clientID: "svc", secret: secret)
            XCTFail("the old secret stops working")
        } catch let error as OAuthError {
            XCTAssertEqual(error, .invalidClient(attempted: true), "a failed secret: 401 at the endpoint")
        }
        do {
            _ = try await admin.clients.rotateSecret(realm: "demo", id: "app", metadata: metadata)
            XCTFail("a public client has no secret")
        } catch let error as ServiceRefusal {
            XCTAssertEqual(error.code, "Client.PublicSecret")
        }
        let (_, warning) = try await admin.clients.update(realm: "demo", id: "app", metadata: metadata) { $0.rpID = "b.demo.test" }
        XCTAssertTrue(warning?.contains("enrolled under a.demo.test will no longer sign in") == true, warning ?? "no warning")
        let (_, quiet) = try await admin.clients.update(realm: "demo", id: "app", metadata: metadata) { $0.allowedScopes.insert("email") }
        XCTAssertNil(quiet)
        let clients = try await admin.clients.list(realm: "demo").map(\.id)
        XCTAssertEqual(clients, ["app", "svc"])
        _ = try await admin.realms.update("demo", metadata: metadata) { $0.nativeGrants.enabled = true }
        let active = try await admin.clients.inertNativeGrants(realm: "demo")
        XCTAssertTrue(active.isEmpty, "nothing is inert with the flag on")

        let id = try await core.administration.users.create(realm: "demo", email: "ada@example.com", metadata: .init()).id
        let user = try await core.administration.users.state(realm: "demo", id: id)
        let foundByEmail = try await admin.users.find(realm: "demo", "ADA@example.com")
        XCTAssertEqual(foundByEmail, id)
        let app = try await core.clientAuthenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let tokens = try await core.tokenService.signIn(
            client: app, user: user, grantType: .otp, scope: "openid offline_access", resources: [], amr: ["otp"], issuer: "https://x",
            metadata: EventMetadata(actor: "user:\(id)", clientIP: "203.0.113.5"))
        _ = try await core.tokenService.refresh(RefreshRequest(client: app, refreshToken: tokens.refreshToken!, issuer: "https://x", metadata: .none))
        _ = try? await core.tokenService.refresh(RefreshRequest(client: app, refreshToken: tokens.refreshToken!, issuer: "https://x", metadata: .none))
        let loggedOut = try await admin.users.apply(.logoutEverywhere, realm: "demo", userID: id, metadata: metadata)
        XCTAssertEqual(loggedOut.status, .active)

        let audit = try await admin.audit.userHistory(realm: "demo", userID: id)
        XCTAssertEqual(
            audit.map(\.event),
            ["user.registered", "token_family.started", "token_family.refreshed", "token_family.revoked", "user.security_stamp_rotated"])
        XCTAssertEqual(audit[1].client, "app")
        XCTAssertEqual(audit[1].clientIP, "203.0.113.5")
        XCTAssertEqual(audit[3].detail, "reason=reuse", "the reuse is visible in the user's audit")
        XCTAssertEqual(audit[4].actor, "admin:test")
        await database.drop()
    }
}
