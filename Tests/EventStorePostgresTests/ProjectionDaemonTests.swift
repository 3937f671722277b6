import AsyncTestSupport
import EventSourcing
import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

final class ProjectionDaemonTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!
    let projection = AppliedLog()

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        store = PostgresEventStore(pool: database.pool)
        try await database.pool.query(projection.createTable)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    private func appendConcurrently(streams: Int, eventsEach: Int) async throws {
        let store = self.store!
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<streams {
                group.addTask {
                    for version in 0..<eventsEach {
                        _ = try await store.append(
                            [try counted(version)], to: stream("s\(index)"), expected: ExpectedVersion(current: Int64(version)), metadata: .none)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func testTwoInstancesApplyEveryEventExactlyOnce() async throws {
        // Two instances: separate pools and daemons on one database, running while appends happen.
        let poolB = database.makePool()
        let daemonA = ProjectionDaemon(pool: database.pool, projections: [projection], pollInterval: .milliseconds(20), batchSize: 50)
        let daemonB = ProjectionDaemon(pool: poolB, projections: [projection], pollInterval: .milliseconds(20), batchSize: 50)
        let runA = Task { await daemonA.run() }
        let runB = Task { await daemonB.run() }
        try await appendConcurrently(streams: 20, eventsEach: 25)
        let pool = database.pool
        try await Eventually.wait("500 events applied") { try await pool.count("SELECT count(*) FROM applied_log") == 500 }
        runA.cancel()
        runB.cancel()
        _ = await runA.result
        _ = await runB.result

        let rows = try await database.pool.count("SELECT count(*) FROM applied_log")
        let maxTimes = try await database.pool.count("SELECT max(times) FROM applied_log")
        XCTAssertEqual(rows, 500)
        XCTAssertEqual(maxTimes, 1, "no event applied twice")
        let status = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(status.applied, 500, "the checkpoint counted exactly what the output holds")
        XCTAssertEqual(status.lag, 0)
        await poolB.close()
    }

    func testDaemonIsWokenByNotifyWithoutWaitingForThePoll() async throws {
        // Polling once an hour: within the hang guard only a NOTIFY can wake it.
        let daemon = ProjectionDaemon(pool: database.pool, projections: [projection], pollInterval: .seconds(3600))
        let run = Task { await daemon.run() }
        let pool = database.pool
        // Its LISTEN connection is up (seen from the server's side, not guessed by a sleep).
        try await Eventually.wait("the daemon listens") {
            try await pool.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'") > 0
        }
        _ = try await store.append([try counted(1)], to: stream("wake"), expected: .noStream, metadata: .none)
        try await Eventually.wait("the appended event applied") {
            try await pool.count("SELECT count(*) FROM applied_log") == 1
        }
        run.cancel()
        _ = await run.result
    }

    func testPoisonousEventIsParkedAfterThreeTriesAndTheRestContinue() async throws {
        _ = try await store.append([try counted(1)], to: stream("p"), expected: .noStream, metadata: .none)
        _ = try await store.append([try counted(-1)], to: stream("p"), expected: .exact(1), metadata: .none)  // violates CHECK
        _ = try await store.append([try counted(3)], to: stream("p"), expected: .exact(2), metadata: .none)
        let daemon = ProjectionDaemon(pool: database.pool, projections: [projection], maxAttempts: 3)

        for attempt in 1...2 {
            try await daemon.catchUp()
            let versions = try await database.pool.query("SELECT version FROM applied_log").rows.map { try $0.decode(Int.self, at: 0) }
            XCTAssertEqual(versions, [1], "attempt \(attempt): the event before the poison applied, nothing after it")
            let status = try await ProjectionStatus.read(projection, pool: database.pool)
            XCTAssertEqual(status.applied, 1, "the checkpoint stands just before the poisonous event")
            XCTAssertEqual(status.lag, 2)
            XCTAssertEqual(status.failing, 1)
            XCTAssertEqual(status.parked, 0)
        }
        try await daemon.catchUp()  // third failure parks it
        try await daemon.catchUp()  // and the rest continue
        let versions = try await database.pool.query("SELECT version FROM applied_log ORDER BY version").rows.map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(versions, [1, 3])
        let status = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(status.parked, 1)
        XCTAssertEqual(status.failing, 0)
        XCTAssertEqual(status.lag, 0)
        let failure = try await database.pool.query("SELECT attempts, event_type, last_error FROM projection_failures").first!
        XCTAssertEqual(try failure.decode(Int.self, at: 0), 3)
        XCTAssertEqual(try failure.decode(String.self, at: 1), Counted.eventType)
        XCTAssertTrue(try failure.decode(String.self, at: 2).contains("23514"), "the check violation is recorded")

        // Another instance started later knows the parked event from the table.
        let fresh = ProjectionDaemon(pool: database.pool, projections: [projection])
        _ = try await store.append([try counted(4)], to: stream("p"), expected: .exact(3), metadata: .none)
        try await fresh.catchUp()
        let count = try await database.pool.count("SELECT count(*) FROM applied_log")
        XCTAssertEqual(count, 3)
    }

    func testBusyWhenAnotherInstanceHoldsTheProjection() async throws {
        _ = try await store.append([try counted(1)], to: stream("busy"), expected: .noStream, metadata: .none)
        let holder = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await holder.query("SELECT pg_advisory_lock(hashtextextended('modgud.projection/applied_log', 0))")
        let worker = PostgresProjectionWorker(pool: database.pool, projections: [projection])
        let step = try await worker.step("applied_log")
        XCTAssertEqual(step, .busy)
        // Released by the holder itself (a closed connection's locks go when the server notices).
        try await holder.query("SELECT pg_advisory_unlock(hashtextextended('modgud.projection/applied_log', 0))")
        await holder.close()
        let next = try await worker.step("applied_log")
        XCTAssertEqual(next, .applied(1))
        await worker.shutdown()
    }
}
