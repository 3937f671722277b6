import AsyncTestSupport
import EmbeddedPostgres
import Foundation
@testable import PQ
import PostgresTestSupport
import XCTest

final class PQPoolTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 2)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// A pipeline cut off by the backend's end: the pool replaces the connection. (The cluster
    /// test's database restart found the racier variant, where libpq had not yet seen the
    /// closed socket and the connection stayed in pipeline mode; `recordLeaseState` now counts
    /// a connection still in pipeline mode, or not idle after a rollback, as broken.)
    func testAConnectionWhosePipelineWasCutOffIsReplaced() async throws {
        let pool = database.makePool(maxConnections: 1)
        let first = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
        do {
            _ = try await pool.withConnection { connection in
                try await connection.pipeline(["SELECT pg_terminate_backend(pg_backend_pid())", "SELECT 1", "SELECT 2"])
            }
            XCTFail("the backend ended mid-pipeline")
        } catch {
            XCTAssertTrue(PQError.meansDatabaseUnavailable(error), "\(error)")
        }
        for _ in 0..<3 {
            let pid = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
            XCTAssertNotEqual(pid, first, "a fresh connection, not the cut-off one")
        }
        let state = try await pool.withConnection { connection in
            let one = try await connection.pipeline(["SELECT 1", "SELECT 2"])
            return try one.map { try $0.first!.decode(Int.self, at: 0) }
        }
        XCTAssertEqual(state, [1, 2])
    }

    func testServerTerminatedConnectionIsReplaced() async throws {
        let pool = database.makePool(maxConnections: 1)
        let pid = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
        let admin = try await TestDatabase.adminPool()
        let terminated = try await admin.query("SELECT pg_terminate_backend(\(pid))").first!.decode(Bool.self, at: 0)
        XCTAssertTrue(terminated)
        // Wait until the server has really let go of the backend.
        try await Eventually.wait("backend \(pid) gone") {
            try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)").first!.decode(Int.self, at: 0) == 0
        }
        let next = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
        XCTAssertNotEqual(next, pid, "the dropped connection was replaced by a new backend")
        await pool.close()
    }

    func testConnectionBrokenDuringUseIsDiscardedAndTheNextCallerGetsAFreshOne() async throws {
        let pool = database.makePool(maxConnections: 1)
        do {
            try await pool.query("SELECT pg_terminate_backend(pg_backend_pid())")
            XCTFail("terminating our own backend fails the statement")
        } catch let error as PQError {
            XCTAssertTrue(error.isConnectionFailure, "\(error)")
        }
        let value = try await pool.query("SELECT 42").first!.decode(Int.self, at: 0)
        XCTAssertEqual(value, 42)
        await pool.close()
    }

    func testWaitersAreServedInArrivalOrder() async throws {
        let pool = PQPool(configuration: PQConfiguration(connectionString: database.url), options: .init(maxConnections: 1))
        let order = OrderLog()
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await pool.withConnection { _ in
                for await _ in release { break }  // hold the only connection until told
            }
        }
        try await waitFor { pool.statistics.open == 1 && pool.statistics.idle == 0 }
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<5 {
            waiters.append(Task {
                try await pool.withConnection { _ in await order.append(index) }
            })
            // The next waiter starts only once this one is queued: arrival order is known.
            try await waitFor { pool.statistics.waiting == index + 1 }
        }
        releaseSignal.yield()
        try await holder.value
        for waiter in waiters { try await waiter.value }
        let served = await order.values
        XCTAssertEqual(served, [0, 1, 2, 3, 4])
        await pool.close()
    }

    private func waitFor(_ condition: () -> Bool) async throws {
        try await Eventually.wait("pool statistics reached", every: .milliseconds(2)) { condition() }
    }

    /// Issue 49: waiting leaves nothing behind once served (one sweeper per pool, which stops
    /// when nobody waits, not a timeout task per wait that outlived it by the whole timeout),
    /// and a later wait still times out (the sweeper starts again).
    func testServedWaitersLeaveNoTimerBehindAndTimeoutsStillFire() async throws {
        let pool = PQPool(
            configuration: PQConfiguration(connectionString: database.url),
            options: .init(maxConnections: 1, acquireTimeout: .milliseconds(200)))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 { group.addTask { try await pool.query("SELECT \(index)::int8").first!.decode(Int.self, at: 0) } }
            var answers: [Int] = []
            for try await answer in group { answers.append(answer) }
            XCTAssertEqual(answers.sorted(), Array(0..<20), "twenty callers on one connection, every one served")
        }
        try await Eventually.wait("the sweeper stopped: nobody waits") { !pool.isSweeping }

        let (release, releaser) = AsyncStream<Void>.makeStream()
        let holder = Task { try await pool.withConnection { _ in for await _ in release { break } } }
        try await waitFor { pool.statistics.open == 1 && pool.statistics.idle == 0 }
        do {
            _ = try await pool.query("SELECT 1")
            XCTFail("the pool is full for longer than the timeout")
        } catch let error as PQError {
            XCTAssertEqual(error.code, .poolTimeout, "a new wait started the sweeper again")
        }
        releaser.yield()
        releaser.finish()
        try await holder.value
        try await Eventually.wait("the sweeper stopped again") { !pool.isSweeping }
        let after = try await pool.query("SELECT 1").first!.decode(Int.self, at: 0)
        XCTAssertEqual(after, 1)
        await pool.close()
    }

    func testAcquireTimesOutWhenThePoolStaysFull() async throws {
        let pool = PQPool(
            configuration: PQConfiguration(connectionString: database.url),
            options: .init(maxConnections: 1, acquireTimeout: .milliseconds(200)))
        // The holder keeps the only connection until this test cancels its statement, so the
        // pool stays full for as long as the test needs, however slow the machine.
        let holder = Task {
            try await pool.withConnection { connection in try await connection.query("SELECT pg_sleep(600)") }
        }
        try await waitFor { pool.statistics.open == 1 && pool.statistics.idle == 0 }
        do {
            _ = try await pool.query("SELECT 1")
            XCTFail("the pool is full for longer than the timeout")
        } catch let error as PQError {
            XCTAssertEqual(error.code, .poolTimeout)
        }
        let admin = try await TestDatabase.adminPool()
        try await Eventually.wait("the holder's statement cancelled") {
            try await admin.query(
                "SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)' AND state = 'active') c"
            ).first!.decode(Int.self, at: 0) > 0
        }
        _ = await holder.result
        let after = try await pool.query("SELECT 1").first!.decode(Int.self, at: 0)
        XCTAssertEqual(after, 1, "the pool works again once the connection is back")
        await pool.close()
    }

    func testConnectionReturnedInsideATransactionIsRolledBack() async throws {
        let pool = database.makePool(maxConnections: 1)
        try await pool.query("CREATE TABLE items (id int)")
        try await pool.withConnection { connection in
            try await connection.execute("BEGIN")
            try await connection.query("INSERT INTO items VALUES (1)")
        }
        let count = try await pool.query("SELECT count(*) FROM items").first!.decode(Int.self, at: 0)
        XCTAssertEqual(count, 0)
        await pool.close()
    }
}

actor OrderLog {
    var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}

/// Issue 26, item 3: a connection that reached a read-only server (a standby, or a demoted
/// primary after a switchover) is not kept: the pool reconnects, and libpq chooses again.
extension PQPoolTests {
    func testAConnectionAnsweredReadOnlyIsDiscardedAndTheNextOneWrites() async throws {
        let pool = database.makePool(maxConnections: 1)
        _ = try await pool.query("CREATE TABLE written (n int)")
        // The session turns read-only, as every session on a standby is.
        let first = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
        _ = try await pool.query("SET default_transaction_read_only = on")
        do {
            _ = try await pool.query("INSERT INTO written VALUES (1)")
            XCTFail("a read-only session refuses writes")
        } catch let error as PQError {
            XCTAssertEqual(error.sqlState, "25006")
            XCTAssertTrue(error.meansDatabaseUnavailable, "answered 503 and retried, not blamed on the request")
        }
        let next = try await pool.query("SELECT pg_backend_pid()").first!.decode(Int32.self, at: 0)
        XCTAssertNotEqual(next, first, "a fresh connection, not the read-only one")
        _ = try await pool.query("INSERT INTO written VALUES (2)")
        let count = try await pool.query("SELECT count(*) FROM written").first?.decode(Int.self, at: 0)
        XCTAssertEqual(count, 1)
    }

    /// libpq chooses among hosts (`host=a,b`, `target_session_attrs=read-write`): the string is
    /// passed through intact, so the first host refusing connections is skipped.
    func testAMultiHostConnectionStringIsPassedToLibpqIntact() async throws {
        guard let components = URLComponents(string: database.url), let port = components.port, let host = components.host else {
            return XCTFail("not a URL: \(database.url)")
        }
        let closed = try EmbeddedPostgres.freePort()  // nothing listens there
        let user = components.user.map { $0 + "@" } ?? ""
        let query = (components.query.map { $0 + "&" } ?? "") + "target_session_attrs=read-write"
        let multiURL = "postgresql://\(user)\(host):\(closed),\(host):\(port)\(components.path)?\(query)"
        let connection = try await PQConnection.connect(PQConfiguration(connectionString: multiURL, connectTimeoutSeconds: 5))
        let served = try await connection.query("SELECT inet_server_port(), pg_is_in_recovery()").first!
        XCTAssertEqual(try served.decode(Int.self, at: 0), port, "the second host, the first refused")
        XCTAssertEqual(try served.decode(Bool.self, at: 1), false)
        await connection.close()
    }
}
