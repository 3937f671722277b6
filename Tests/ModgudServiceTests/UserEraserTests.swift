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

    /// Issue 67, item 2: a refresh that finds the user erased between the erasure's stamp and
    /// its revocations ends the family itself (reason `stamp`); the erasure still counts it,
    /// since its stamp ended it. A family a logout ended meanwhile is not counted. The
    /// interleaving is forced through the eraser's seam: no timing.
    func testAnErasureCountsTheFamiliesARacingRefreshEndedForItsStamp() async throws {
        let database = try await TestDatabase.create(maxConnections: 20)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 8, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        _ = try await admin.realms.update("r", metadata: .init()) { $0.nativeGrants.enabled = true }
        try await core.keys.rotate(realm: "r", now: Date(), metadata: .init())
        _ = try await admin.clients.create(
            realm: "r", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["offline_access"]),
            metadata: .init())
        let id = try await admin.users.create(realm: "r", email: "racing.refresh@example.com", metadata: .init()).id
        let user = try await core.userActors.actor(for: StreamNames.user(realm: "r", userID: id)).current().state
        let client = try await core.clientAuthenticator.authenticate(realm: "r", clientID: "app", secret: nil)
        let tokens = core.tokenService
        func signIn() async throws -> TokenResponse {
            try await tokens.signIn(
                client: client, user: user, grantType: .otp, scope: "offline_access", resources: [], amr: ["otp"], issuer: "https://r.test",
                metadata: .init())
        }
        let refreshed = try await signIn()
        let loggedOut = try await signIn()
        _ = try await signIn()  // ended by the erasure's own revocation
        let ended = Counter()

        var eraser = core.eraser
        eraser.betweenStampAndRevocations = {
            // Another instance's refresh, after the stamp: it finds the user erased.
            do {
                _ = try await tokens.refresh(RefreshRequest(client: client, refreshToken: refreshed.refreshToken!, issuer: "https://r.test", metadata: .init()))
                XCTFail("refreshed an erased user's session")
            } catch let error as OAuthError {
                XCTAssertEqual(error.error, "invalid_grant")
            }
            // And a logout of another session (RFC 7009): an end for another reason.
            try await core.tokenRevocation.revoke(client: client, token: loggedOut.refreshToken!, metadata: .init())
            await ended.add()
        }
        let outcome = try await eraser.erase(realm: "r", id.uuidString, metadata: .init())
        let hookRan = await ended.value
        XCTAssertEqual(hookRan, 1)
        XCTAssertTrue(outcome.erasedNow)
        XCTAssertEqual(outcome.familiesRevoked, 2, "the refresh's stamp revocation and the erasure's own; not the logout")
        let reasons = try await database.pool.query(
            "SELECT revoked_reason, count(*) FROM token_families WHERE user_id = \(id) GROUP BY revoked_reason ORDER BY revoked_reason"
        ).rows.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1))" }
        XCTAssertEqual(reasons, ["erased 1", "logout 1", "stamp 1"], "the interleaving this test forces")
        let again = try await admin.users.erase(realm: "r", id.uuidString, metadata: .init())
        XCTAssertEqual(again.familiesRevoked, 0, "erasing again ends nothing more")
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

private actor Counter {
    private(set) var value = 0
    func add() { value += 1 }
}
