import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 40, item 1: a decision that writes nothing, or refuses, stands on the store's latest
/// state, not on one instance's cache. Two `IdentityInstance`s on one database play two
/// `modgud serve` processes: each keeps its own actors.
final class LatestStateDecisionTests: XCTestCase {
    var database: TestDatabase!
    var first: IdentityInstance!
    var second: IdentityInstance!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        first = IdentityInstance(pool: database.pool)
        second = IdentityInstance(pool: database.makePool())
        _ = try await first.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
    }

    override func tearDown() async throws {
        await second?.pool.close()
        await database?.drop()
    }

    private func registeredUser() async throws -> UUID {
        let id = UUID()
        _ = try await first.user(id).execute(
            .register(id: id, email: .plain("ada@example.com"), emailConfirmed: true, username: nil, firstName: nil, lastName: nil, securityStamp: "s0", via: "admin"),
            now: now, metadata: .none)
        return id
    }

    private func types(_ user: UUID) async throws -> [String] {
        try await first.store.readStream(StreamNames.user(realm: "demo", userID: user).id, after: 0).map(\.envelope.type)
    }

    /// The scenario an operator found with two instances: disable on A, enable on B, disable
    /// on A. A's cache still said "disabled"; the third command wrote nothing and the user went
    /// on signing in.
    func testANoOpOnAStaleCacheIsDecidedAgainOnTheStore() async throws {
        let user = try await registeredUser()
        _ = try await first.user(user).execute(.disable(newStamp: "s1"), now: now, metadata: .none)
        _ = try await second.user(user).execute(.enable, now: now, metadata: .none)
        let again = try await first.user(user).execute(.disable(newStamp: "s2"), now: now, metadata: .none)
        XCTAssertEqual(again.state.status, .disabled)
        XCTAssertFalse(again.events.isEmpty, "the second disable wrote its events")
        let written = try await types(user)
        XCTAssertEqual(written.filter { $0 == "user.disabled" }.count, 2, "\(written)")
        XCTAssertEqual(written.last, "user.security_stamp_rotated")
        let seenByB = try await second.user(user).current().state.status
        XCTAssertEqual(seenByB, .disabled)
    }

    /// The same for roles: grant on A, revoke on B, grant on A.
    func testARoleGrantOnAStaleCacheIsWritten() async throws {
        let user = try await registeredUser()
        _ = try await first.user(user).execute(.setRole("operator", granted: true), now: now, metadata: .none)
        _ = try await second.user(user).execute(.setRole("operator", granted: false), now: now, metadata: .none)
        let again = try await first.user(user).execute(.setRole("operator", granted: true), now: now, metadata: .none)
        XCTAssertEqual(again.state.roles, ["operator"])
        let written = try await types(user)
        XCTAssertEqual(written.filter { $0 == "user.roles_changed" }.count, 3, "\(written)")
    }

    /// A refusal decided on a stale cache: A saw TOTP on, B turned it off, A's "already on"
    /// would be wrong. A reads the store and enables it.
    func testARefusalOnAStaleCacheIsDecidedAgainOnTheStore() async throws {
        let user = try await registeredUser()
        _ = try await first.user(user).execute(.enableTOTP(encryptedSecret: "sealed-1"), now: now, metadata: .none)
        _ = try await second.user(user).execute(.disableTOTP, now: now, metadata: .none)
        let again = try await first.user(user).execute(.enableTOTP(encryptedSecret: "sealed-2"), now: now, metadata: .none)
        XCTAssertEqual(again.state.encryptedTOTPSecret, "sealed-2")
    }

    /// A refusal that holds on the latest state is still a refusal, and a no-op that holds is
    /// still a no-op: nothing is written.
    func testAConfirmedRefusalOrNoOpWritesNothing() async throws {
        let user = try await registeredUser()
        _ = try await first.user(user).execute(.enableTOTP(encryptedSecret: "sealed-1"), now: now, metadata: .none)
        _ = try await second.user(user).current()  // B's cache is current
        do {
            _ = try await second.user(user).execute(.enableTOTP(encryptedSecret: "sealed-2"), now: now, metadata: .none)
            XCTFail("TOTP is on")
        } catch let error as DomainError {
            XCTAssertEqual(error.code, "TOTP.AlreadyEnabled")
        }
        let noOp = try await second.user(user).execute(.enable, now: now, metadata: .none)
        XCTAssertTrue(noOp.events.isEmpty)
        XCTAssertEqual(noOp.state.status, .active)
        let written = try await types(user)
        XCTAssertEqual(written, ["user.registered", "user.totp_enabled"])
    }
}
