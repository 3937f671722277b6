import EventSourcing
import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// Issue 70: a projection that names its event types reads only those, and its checkpoint
/// moves past the rest of the log up to the horizon.
final class TypedProjectionReadTests: XCTestCase {
    func testATypedProjectionReadsItsTypesAndItsCheckpointPassesTheRest() async throws {
        let database = try await TestDatabase.create(maxConnections: 6)
        let store = PostgresEventStore(pool: database.pool)
        let projection = AppliedLog(name: "counted_log", eventTypes: [Counted.eventType])
        try await database.pool.query(projection.createTable)
        for index in 0..<30 {
            let event = index % 3 == 0 ? try counted(index) : try NewEvent(Noted(text: "n\(index)"))
            _ = try await store.append([event], to: stream("s\(index)"), expected: .noStream, metadata: .none)
        }
        let worker = PostgresProjectionWorker(pool: database.pool, projections: [projection], batchSize: 4)
        var steps: [ProjectionStep] = []
        while true {
            let step = try await worker.step(projection.name)
            steps.append(step)
            if step == .caughtUp || steps.count > 20 { break }
        }
        XCTAssertEqual(steps, [.applied(4), .applied(4), .applied(2), .caughtUp], "10 counted events in batches of 4; the noted ones never read")
        let countedRows = try await database.pool.count("SELECT count(*) FROM counted_log WHERE type = \(Counted.eventType)")
        let rows = try await database.pool.count("SELECT count(*) FROM counted_log")
        XCTAssertEqual([countedRows, rows], [10, 10], "the counted events, and nothing else")
        var status = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(status.applied, 10)
        XCTAssertEqual(status.lag, 0, "the checkpoint stands at the log's last event, a noted one")

        // Only events of other types: one step moves the checkpoint past them, applying nothing.
        for index in 30..<35 {
            _ = try await store.append([try NewEvent(Noted(text: "n\(index)"))], to: stream("s\(index)"), expected: .noStream, metadata: .none)
        }
        let passing = try await worker.step(projection.name)
        let after = try await worker.step(projection.name)
        XCTAssertEqual([passing, after], [.applied(0), .caughtUp])
        status = try await ProjectionStatus.read(projection, pool: database.pool)
        XCTAssertEqual(status.lag, 0)
        XCTAssertEqual(status.applied, 10)

        // A rebuild reads the same events and gives the same rows.
        let report = try await ProjectionRebuilder(pool: database.pool, batchSize: 3).rebuild(projection)
        XCTAssertEqual(report.events, 10)
        let rebuilt = try await database.pool.count("SELECT count(*) FROM counted_log WHERE times = 1")
        XCTAssertEqual(rebuilt, 10)
        await worker.shutdown()
        await database.drop()
    }
}
