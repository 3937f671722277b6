import AsyncTestSupport
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// Statements run by the calling task (`pipelineInPlace`, `queryInPlace`; issue 49, item 2):
/// suspended on the socket, never blocking a thread of Swift's cooperative pool, and with the
/// same answers, errors and connection states as on the connection's thread.
final class PQInPlaceTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// 16 statements that wait until cancelled, all in place. Were the calling tasks blocked in
    /// libpq, the cooperative pool (as many threads as cores) would hold at most that many, and
    /// this test's own polling could not run: 16 active at once proves they are suspended.
    func testWaitingStatementsSuspendTheirTasksWithoutBlockingAThread() async throws {
        let pool = database.pool
        let before = PQRoundTrips.inPlace
        let sleepers = (0..<16).map { _ in Task { try await pool.pipeline(["SELECT pg_sleep(600)"]) } }
        let admin = try await TestDatabase.adminPool()
        let active = "SELECT count(*)::int FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)' AND state = 'active'"
        try await Eventually.wait("16 statements in flight at once") {
            try await admin.query(PQQuery(active, binds: [])).first!.decode(Int.self, at: 0) == 16
        }
        XCTAssertGreaterThanOrEqual(PQRoundTrips.inPlace - before, 16)
        _ = try await admin.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")
        for sleeper in sleepers {
            do {
                _ = try await sleeper.value
                XCTFail("a cancelled statement must fail")
            } catch let error as PQError {
                XCTAssertEqual(error.sqlState, "57014")
            }
        }
        // Every connection is idle and usable again, in place and on its thread.
        let rows = try await pool.pipeline(["SELECT 41 + 1"])
        XCTAssertEqual(try rows[0].first!.decode(Int.self, at: 0), 42)
        XCTAssertEqual(pool.statistics.open, 16)
    }

    /// The same statements give the same rows and errors in place as on the thread, a failed
    /// pipeline rolls back as a whole, and what the in-place paths leave to the thread (a lone
    /// statement's first use, which prepares it; an open transaction) still works.
    func testAnswersAndErrorsAreTheThreadsOnes() async throws {
        let connection = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await connection.execute("CREATE TABLE items (id int CONSTRAINT items_pk PRIMARY KEY, name text)")
        let insert = PQQuery("INSERT INTO items VALUES ($1, $2) RETURNING name", 1, "first")
        let inserted = try await connection.queryInPlace(insert)  // its first use: prepared on the thread
        XCTAssertEqual(try inserted.first!.decode(String.self, at: 0), "first")
        do {
            _ = try await connection.queryInPlace(insert)
            XCTFail("a duplicate key must fail")
        } catch {
            XCTAssertEqual(error.sqlState, "23505")
            XCTAssertEqual(error.constraint, "items_pk")
        }
        do {
            _ = try await connection.pipelineInPlace([
                PQQuery("INSERT INTO items VALUES ($1, $2)", 2, "second"), "SELECT 1/0", PQQuery("INSERT INTO items VALUES ($1, $2)", 3, "third"),
            ])
            XCTFail("division by zero must fail")
        } catch {
            XCTAssertEqual(error.index, 1)
            XCTAssertEqual(error.error.sqlState, "22012")
        }
        let names = try await connection.pipelineInPlace(["SELECT string_agg(name, ',' ORDER BY id) FROM items"])
        XCTAssertEqual(try names[0].first!.decode(String.self, at: 0), "first")
        XCTAssertEqual(connection.stateAfterLastOperation, .idle)
        // An explicit transaction left open falls back to the thread, which keeps it.
        _ = try await connection.pipelineInPlace(["BEGIN", PQQuery("INSERT INTO items VALUES ($1, $2)", 4, "fourth")])
        XCTAssertEqual(connection.stateAfterLastOperation, .inTransaction)
        _ = try await connection.pipelineInPlace(["COMMIT"])
        let count = try await connection.queryInPlace("SELECT count(*)::int FROM items").first!.decode(Int.self, at: 0)
        XCTAssertEqual(count, 2)
        await connection.close()
    }

    /// A connection the server ended while it was idle is reset on its thread before the next
    /// statement, in place or not: nothing is lost between transactions.
    func testAConnectionEndedWhileIdleIsResetFirst() async throws {
        let pool = PQPool(configuration: PQConfiguration(connectionString: database.url), options: .init(maxConnections: 1))
        let before = try await pool.pipeline(["SELECT pg_backend_pid()"])[0].first!.decode(Int.self, at: 0)
        let admin = try await TestDatabase.adminPool()
        try await admin.query(PQQuery("SELECT pg_terminate_backend($1::int)", before))
        try await Eventually.wait("the backend is gone") {
            try await admin.query(PQQuery("SELECT count(*)::int FROM pg_stat_activity WHERE pid = $1", before)).first!.decode(Int.self, at: 0) == 0
        }
        let after = try await pool.pipeline(["SELECT pg_backend_pid()"])[0].first!.decode(Int.self, at: 0)
        XCTAssertNotEqual(after, before)
        await pool.close()
    }
}
