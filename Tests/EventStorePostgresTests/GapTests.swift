import EventSourcing
@testable import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// docs/architecture.md, "The gap problem": positions are handed out at insert and become
/// visible at commit; a reader must never pass an event that commits late.
final class GapTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!
    var daemon: ProjectionDaemon!
    let projection = AppliedLog()

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 10)
        store = PostgresEventStore(pool: database.pool)
        try await database.pool.query(projection.createTable)
        daemon = ProjectionDaemon(pool: database.pool, projections: [projection], pollInterval: .milliseconds(50))
    }

    override func tearDown() async throws {
        await daemon?.worker.shutdown()
        await database?.drop()
    }

    /// Opens a transaction on its own connection that appends one event and stays open.
    private func openAppend(_ key: String) async throws -> PQConnection {
        let connection = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await connection.execute("BEGIN")
        try await connection.query(
            EventStoreSQL.append(
                stream: stream(key), expected: .noStream, types: [Counted.eventType], revisions: [1],
                payloads: [PQJSON(bytes: try counted(7).payload)], metadata: PQJSON("{}")))
        return connection
    }

    private func applied() async throws -> [String] {
        try await database.pool.query("SELECT stream_id FROM applied_log ORDER BY stream_id").rows.map { try $0.decode(String.self, at: 0) }
    }

    func testLaterAppendCommittingFirstNeverLetsTheProjectionPassTheEarlierOne() async throws {
        let earlier = try await openAppend("a")  // inserts first: smaller position and transaction id
        let later = try await store.append([try counted(1)], to: stream("b"), expected: .noStream, metadata: .none)
        let earlierPosition = try await earlier.query("SELECT position FROM events WHERE stream_id = 'counter-a'").first!.decode(Int64.self, at: 0)
        XCTAssertLessThan(earlierPosition, later[0].position, "A took its position before B")

        // B is committed and visible, but A may still commit below it: nothing is admitted.
        try await daemon.catchUp()
        let whileOpen = try await applied()
        XCTAssertEqual(whileOpen, [])
        let readable = try await store.readAll(after: .start, limit: 10, filter: .all)
        XCTAssertEqual(readable.count, 0, "the log read holds back everything behind the open transaction")
        let status = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(status.lag, 1, "B shows up as lag")
        XCTAssertEqual(status.heldBehindOpenTransaction, 1)

        try await earlier.execute("COMMIT")
        await earlier.close()
        try await daemon.catchUp()
        let afterCommit = try await applied()
        XCTAssertEqual(afterCommit, ["counter-a", "counter-b"], "both applied once A committed")
        let order = try await store.readAll(after: .start, limit: 10, filter: .all).map(\.stream.id)
        XCTAssertEqual(order, ["counter-a", "counter-b"])
        let done = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(done.lag, 0)
    }

    func testRolledBackAppendLeavesAHoleThatReadersPassWithoutWaiting() async throws {
        let doomed = try await openAppend("doomed")
        try await doomed.execute("ROLLBACK")
        await doomed.close()
        let kept = try await store.append([try counted(1)], to: stream("kept"), expected: .noStream, metadata: .none)
        let log = try await store.readAll(after: .start, limit: 10, filter: .all)
        XCTAssertEqual(log.map(\.position), [kept[0].position])
        XCTAssertGreaterThan(kept[0].position, 1, "the rolled-back append consumed a position: a hole")
        try await daemon.catchUp()
        let rows = try await applied()
        XCTAssertEqual(rows, ["counter-kept"])
    }

    func testLongOpenTransactionShowsAsLagAndLosesNothing() async throws {
        let open = try await openAppend("slow")
        for index in 0..<20 {
            _ = try await store.append([try counted(index)], to: stream("fast-\(index)"), expected: .noStream, metadata: .none)
        }
        try await daemon.catchUp()
        let held = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(held.lag, 20)
        XCTAssertEqual(held.heldBehindOpenTransaction, 20)
        let before = try await applied()
        XCTAssertTrue(before.isEmpty)

        try await open.execute("COMMIT")
        await open.close()
        try await daemon.catchUp()
        let after = try await applied()
        XCTAssertEqual(after.count, 21)
        let times = try await database.pool.count("SELECT max(times) FROM applied_log")
        XCTAssertEqual(times, 1, "nothing applied twice")
        let caughtUp = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(caughtUp.lag, 0)
        XCTAssertEqual(caughtUp.applied, 21)
    }
}
