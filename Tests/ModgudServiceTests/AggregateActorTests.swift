import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class AggregateActorTests: XCTestCase {
    var database: TestDatabase!
    var instance: IdentityInstance!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 40)
        instance = IdentityInstance(pool: database.pool)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testRealmDirectoryIsCurrentWhenTheCommandAnswersAndAHostHasOneRealm() async throws {
        _ = try await instance.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
        let owner = try await database.pool.query("SELECT realm_id FROM realm_hosts WHERE host = 'login.demo.test'").first?.decode(String.self, at: 0)
        XCTAssertEqual(owner, "demo")
        do {
            _ = try await instance.realm("other").execute(.create(id: "other", settings: demoSettings), now: now, metadata: .none)
            XCTFail("the host already belongs to demo")
        } catch let error as EventStoreError {
            // A lost race for a unique value is typed as such (issue 42), not a projection fault.
            guard case .uniqueValueTaken(let projection, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(projection, "realm_directory")
        }
        let otherStreams = try await database.pool.query("SELECT count(*) FROM streams WHERE id = 'realm-other'").first!.decode(Int.self, at: 0)
        XCTAssertEqual(otherStreams, 0, "the refused realm left no trace")
        // The actor of the refused realm was not corrupted: a valid command works.
        var otherSettings = demoSettings
        otherSettings.hosts = ["other.test"]
        _ = try await instance.realm("other").execute(.create(id: "other", settings: otherSettings), now: now, metadata: .none)
    }

    func testCommandsFromTwoInstancesToOneAggregateAllLandInOrder() async throws {
        _ = try await instance.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
        let second = IdentityInstance(pool: database.makePool())
        let first = instance!
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                let target = index % 2 == 0 ? first : second
                group.addTask {
                    _ = try await target.realm("demo").execute(
                        .rotateSigningKey(kid: "k\(index)", algorithm: "ES256", publicJWK: "{}"), now: now, metadata: .none)
                }
            }
            try await group.waitForAll()
        }
        let versions = try await first.store.readStream("realm-demo", after: 0).map(\.streamVersion)
        XCTAssertEqual(versions, Array(1...21), "every command landed once, versions contiguous")
        let keys = try await database.pool.query("SELECT count(*) FROM signing_keys WHERE realm_id = 'demo'").first!.decode(Int.self, at: 0)
        XCTAssertEqual(keys, 20)
        let state = try await second.realm("demo").current().state
        XCTAssertEqual(state.signingKeys.count, 20)
        await second.pool.close()
    }

    func testEmailIsUniqueAmongTheRealmsLiveAccounts() async throws {
        let email = EmailAddress("ada@example.com")!
        func register(_ id: UUID) async throws {
            _ = try await instance.user(id).execute(
                .register(id: id, email: .plain(email.value), emailConfirmed: true, username: nil, firstName: nil, lastName: nil, securityStamp: "s", via: "admin"),
                now: now, metadata: .none)
        }
        let first = UUID()
        try await register(first)
        do {
            try await register(UUID())
            XCTFail("the email is taken")
        } catch EventStoreError.uniqueValueTaken(let projection, _) {
            XCTAssertEqual(projection, "user_directory")
        }
        _ = try await instance.user(first).execute(.delete(newStamp: "s2"), now: now, metadata: .none)
        try await register(UUID())  // a deleted account frees its email
    }

    func testEvictedActorsReloadTheirState() async throws {
        let small = AggregateRegistry<Realm>(store: instance.store, capacity: 2)
        _ = try await small.actor(for: StreamNames.realm("demo")).execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
        for name in ["a", "b", "c"] { _ = await small.actor(for: StreamNames.realm(name)) }
        let count = await small.count
        XCTAssertEqual(count, 2)
        let reloaded = try await small.actor(for: StreamNames.realm("demo")).current()
        XCTAssertEqual(reloaded.state.id, "demo")
        XCTAssertEqual(reloaded.version, 1)
    }

    func testEvictionForgetsTheLeastRecentlyUsed() async throws {
        let registry = AggregateRegistry<Realm>(store: instance.store, capacity: 10)
        let first = await registry.actor(for: StreamNames.realm("r0"))
        for index in 1..<10 { _ = await registry.actor(for: StreamNames.realm("r\(index)")) }
        _ = await registry.actor(for: StreamNames.realm("r0"))  // r0 is now the most recent
        _ = await registry.actor(for: StreamNames.realm("r10"))  // over capacity: the oldest tenth goes
        let count = await registry.count
        XCTAssertEqual(count, 9)
        let again = await registry.actor(for: StreamNames.realm("r0"))
        XCTAssertTrue(again === first, "a recently used actor survives eviction")
        let evicted = await registry.actor(for: StreamNames.realm("r1"))
        let stillThere = await registry.count
        XCTAssertEqual(stillThere, 10, "r1 was the least recently used: it was evicted and is created anew")
        _ = evicted
    }
}
