import AsyncTestSupport
import Foundation
import Logging
import Synchronization
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 40, item 2: a settings change is answered once every serving instance has dropped its
/// copy, so the next request anywhere uses it: not "within milliseconds, usually".
final class SettingsAcknowledgementTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// Instance B hears changes only after a pause (a loaded instance); A's change returns after
    /// B has applied it, so B's very next read has it, with no polling.
    func testAChangeIsAnsweredOnlyOnceASlowInstanceHasAppliedIt() async throws {
        let a = try ModgudCore(pool: database.pool, masterKey: nil)
        let secondPool = database.makePool(maxConnections: 4)
        let b = try ModgudCore(pool: secondPool, masterKey: nil, settingsMaxAge: .seconds(3600))
        _ = try await a.administration.realms.create("demo", settings: demoSettings, metadata: .none)
        let listening = Flag()
        let listener = SettingsChangeListener(
            configuration: secondPool.configuration, invalidate: { b.settingsNotifier.invalidateLocally($0) }, logger: Logger(label: "test"), applyDelay: .milliseconds(400),
            onListening: { listening.set() })
        let task = Task { await listener.run() }
        try await Eventually.wait("B listens") { listening.isSet }
        let before = try await b.realmDirectory.settings(realm: "demo")
        XCTAssertEqual(before?.displayName, "Demo", "B holds the realm (for an hour without a notification)")

        _ = try await a.administration.realms.update("demo", metadata: .none) { $0.displayName = "Renamed" }
        let after = try await b.realmDirectory.settings(realm: "demo")
        XCTAssertEqual(after?.displayName, "Renamed", "B's next read after A's answer has the change")
        let rows = try await database.pool.query("SELECT acknowledged >= (SELECT last_value FROM settings_changes) FROM settings_instances")
        XCTAssertEqual(try rows.rows.map { try $0.decode(Bool.self, at: 0) }, [true], "B recorded what it applied")
        task.cancel()
        await task.value
        let left = try await database.pool.query("SELECT count(*) FROM settings_instances").first?.decode(Int.self, at: 0)
        XCTAssertEqual(left, 0, "a listener that stops leaves, so nobody waits for it")
        await secondPool.close()
    }

    /// An instance that beats but never applies is waited for up to the bound and named; one
    /// whose heartbeat is old (killed) is not waited for.
    func testAnInstanceThatDoesNotConfirmIsWaitedForUpToTheBoundOnly() async throws {
        _ = try await database.pool.query(
            """
            INSERT INTO settings_instances (instance_id, acknowledged, heartbeat_at) VALUES
              ('deaf', 0, now() + interval '1 hour'), ('gone', 0, now() - interval '1 minute')
            """)
        let unconfirmed = await SettingsChangeListener.announce(.realm("demo"), pool: database.pool, bound: .milliseconds(300))
        XCTAssertEqual(unconfirmed, ["deaf"])
        _ = try await database.pool.query("DELETE FROM settings_instances WHERE instance_id = 'deaf'")
        let none = await SettingsChangeListener.announce(.realm("demo"), pool: database.pool, bound: .seconds(60))
        XCTAssertEqual(none, [], "nobody serving is behind: no wait")
    }

    func testPayloadsCarryTheChangeNumberAndOldOnesStillParse() {
        XCTAssertEqual(SettingsChangeListener.parse("12 client demo app").number, 12)
        XCTAssertEqual(SettingsChangeListener.parse("12 client demo app").change, .client(realm: "demo", id: "app"))
        XCTAssertEqual(SettingsChangeListener.parse("realm demo").change, .realm("demo"))
        XCTAssertNil(SettingsChangeListener.parse("realm demo").number)
        XCTAssertNil(SettingsChangeListener.parse("7 unknown thing").change)
    }
}

/// A flag set from a callback and read by a test.
private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
