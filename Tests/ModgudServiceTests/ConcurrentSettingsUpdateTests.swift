import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 40 (found by the model test): two operators change different members of one realm's or
/// client's settings at once, on two instances. Each change is a read-modify-write of the whole
/// settings; both must land, neither written over with the other's stale read.
final class ConcurrentSettingsUpdateTests: XCTestCase {
    func testConcurrentChangesOfDifferentMembersAllLand() async throws {
        let database = try await TestDatabase.create(maxConnections: 20)
        let secondPool = database.makePool(maxConnections: 8)
        let one = try ModgudCore(pool: database.pool, masterKey: nil).administration
        let two = try ModgudCore(pool: secondPool, masterKey: nil).administration
        var settings = demoSettings
        settings.nativeGrants.enabled = true  // for the client's native grant (issue 65, item 7)
        _ = try await one.realms.create("demo", settings: settings, metadata: .none)
        _ = try await one.clients.create(
            realm: "demo", id: "app", settings: ClientSettings(type: .public, grants: [.otp], allowedScopes: ["openid"]), metadata: .none)
        for round in 1...10 {
            async let name: Void = { _ = try await one.realms.update("demo", metadata: .none) { $0.displayName = "Name \(round)" } }()
            async let grace: Void = { _ = try await two.realms.update("demo", metadata: .none) { $0.sessionLimits.refreshReuseGraceSeconds = round } }()
            async let scopes: Void = { _ = try await one.clients.update(realm: "demo", id: "app", metadata: .none) { $0.allowedScopes = ["openid", "s\(round)"] } }()
            async let audiences: Void = {
                _ = try await two.clients.update(realm: "demo", id: "app", metadata: .none) { $0.audiences = ["https://api\(round).test"] }
            }()
            _ = try await (name, grace, scopes, audiences)
            let realm = try await one.realms.get("demo").settings
            XCTAssertEqual(realm?.displayName, "Name \(round)", "round \(round)")
            XCTAssertEqual(realm?.sessionLimits.refreshReuseGraceSeconds, round, "round \(round)")
            let client = try await two.clients.get(realm: "demo", id: "app").settings
            XCTAssertEqual(client?.allowedScopes, ["openid", "s\(round)"], "round \(round)")
            XCTAssertEqual(client?.audiences, ["https://api\(round).test"], "round \(round)")
        }
        await secondPool.close()
        await database.drop()
    }
}
