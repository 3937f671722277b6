import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 13: an erasure cut short after its events (a crash) is finished by running it again
/// by id, although the erased user's state no longer holds the address: the address's index
/// is still beside the user's key, and it reaches the registrations pending for the address.
final class UserEraserTests: XCTestCase {
    func testAReRunByIdFinishesAnErasureCutShortAfterItsEvents() async throws {
        let database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 8, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        let address = EmailAddress("half.erased@example.com")!
        // A registration code went out, then an operator invited the same address.
        _ = try await core.loadFixtures().registrationCode(email: address, realm: "r", metadata: .init())
        let id = try await admin.users.create(realm: "r", email: address.value, metadata: .init()).id
        func keys() async throws -> Int {
            try await database.pool.query("SELECT count(*) FROM subject_keys WHERE subject LIKE 'user:%'").first!.decode(Int.self, at: 0)
        }
        let before = try await keys()
        XCTAssertEqual(before, 2, "the user's key and the pending registration's")

        // The first run appended its events, then stopped.
        _ = try await core.userActors.actor(for: StreamNames.user(realm: "r", userID: id)).execute(.erase(newStamp: "x"), now: Date(), metadata: .init())
        let again = try await admin.users.erase(realm: "r", id.uuidString, metadata: .init())
        XCTAssertFalse(again.erasedNow)
        XCTAssertEqual(again.keysShredded, 2)
        let after = try await keys()
        XCTAssertEqual(after, 0)
        let third = try await admin.users.erase(realm: "r", id.uuidString, metadata: .init())
        XCTAssertEqual(third.keysShredded, 0, "erasing again is harmless")
        await database.drop()
    }

    /// Keys of registrations that never created their user are shredded by maintenance after a
    /// day; a user's key is not.
    func testAbandonedRegistrationKeysAreShreddedAndUsersKeysAreNot() async throws {
        let database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 8, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        _ = try await core.loadFixtures().registrationCode(email: EmailAddress("never.came@example.com")!, realm: "r", metadata: .init())
        let user = try await admin.users.create(realm: "r", email: "stayed@example.com", metadata: .init()).id
        let vault = try XCTUnwrap(core.vault)
        let early = try await vault.shredAbandoned(before: Date().addingTimeInterval(-PersonalDataVault.abandonedAfter))
        XCTAssertEqual(early, 0, "a day's grace")
        let late = try await vault.shredAbandoned(before: Date().addingTimeInterval(60))
        XCTAssertEqual(late, 1)
        let profile = try await admin.users.profile(realm: "r", userID: user).profile
        XCTAssertEqual(profile.email, "stayed@example.com", "the user's key stays")
        let erased = try await database.pool.query("SELECT count(*) FROM erased_subjects").first!.decode(Int.self, at: 0)
        XCTAssertEqual(erased, 1, "recorded: no key is ever made for it again")
        await database.drop()
    }
}
