import AsyncTestSupport
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// A real deadlock, as a projection rebuild's swap and a two-table read can make: the loser
/// gets 40P01, which callers may run again (`meansTransientConflict`).
final class PQTransientConflictTests: XCTestCase {
    func testADeadlockIsATransientConflict() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        _ = try await database.pool.query("CREATE TABLE first_table (n int)")
        _ = try await database.pool.query("CREATE TABLE second_table (n int)")
        let one = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        let two = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await one.execute("BEGIN; LOCK first_table IN ACCESS EXCLUSIVE MODE")
        try await two.execute("BEGIN; LOCK second_table IN ACCESS EXCLUSIVE MODE")
        async let crossing: Void = one.execute("LOCK second_table IN ACCESS EXCLUSIVE MODE")
        // The first side waits for its lock (seen by the server) before the second crosses it.
        let observer = database.pool
        try await Eventually.wait("the first LOCK waits") {
            try await observer.query(
                "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE NOT l.granted AND d.datname = current_database()"
            ).first!.decode(Int.self, at: 0) > 0
        }
        var failures: [PQError] = []
        do { try await two.execute("LOCK first_table IN ACCESS EXCLUSIVE MODE") } catch { failures.append(error) }
        await two.rollbackQuietly()
        do { try await crossing } catch let error as PQError { failures.append(error) }
        await one.rollbackQuietly()
        XCTAssertEqual(failures.count, 1, "PostgreSQL aborts exactly one side")
        XCTAssertEqual(failures.first?.sqlState, "40P01")
        XCTAssertTrue(failures.first?.meansTransientConflict ?? false)
        XCTAssertFalse(failures.first?.meansDatabaseUnavailable ?? true, "not an outage: no 503")
        await one.close()
        await two.close()
        await database.drop()
    }
}
