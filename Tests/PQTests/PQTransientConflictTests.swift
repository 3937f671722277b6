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
        try await Task.sleep(for: .milliseconds(200))
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
