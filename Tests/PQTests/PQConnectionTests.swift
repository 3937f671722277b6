import AsyncTestSupport
import Foundation
import PQ
import PostgresTestSupport
import XCTest

final class PQConnectionTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testServerErrorsCarrySQLStateAndConstraint() async throws {
        try await database.pool.query("CREATE TABLE items (id int CONSTRAINT items_pk PRIMARY KEY)")
        try await database.pool.query("INSERT INTO items VALUES (1)")
        do {
            try await database.pool.query("INSERT INTO items VALUES (1)")
            XCTFail("a duplicate key must fail")
        } catch let error as PQError {
            XCTAssertEqual(error.code, .server)
            XCTAssertEqual(error.sqlState, "23505")
            XCTAssertEqual(error.constraint, "items_pk")
        }
        do {
            try await database.pool.query("SELEKT 1")
            XCTFail("a syntax error must fail")
        } catch let error as PQError {
            XCTAssertEqual(error.sqlState, "42601")
        }
    }

    func testTransactionRollsBackWhenTheBodyThrows() async throws {
        try await database.pool.query("CREATE TABLE items (id int PRIMARY KEY)")
        struct Abort: Error {}
        do {
            _ = try await database.pool.transaction { connection in
                try connection.query("INSERT INTO items VALUES (1)")
                throw Abort()
            }
            XCTFail("the body's error must be rethrown")
        } catch is Abort {}
        let count = try await database.pool.query("SELECT count(*) FROM items").first!.decode(Int.self, at: 0)
        XCTAssertEqual(count, 0)
    }

    func testPipelineIsAtomicAndNamesTheFailingStatement() async throws {
        try await database.pool.query("CREATE TABLE items (id int PRIMARY KEY)")
        do {
            _ = try await database.pool.withConnection { connection in
                try await connection.pipeline([
                    "INSERT INTO items VALUES (\(Int32(1)))",
                    "INSERT INTO items VALUES (\(Int32(2)))",
                    "INSERT INTO items VALUES (\(Int32(1)))",
                    "INSERT INTO items VALUES (\(Int32(3)))",
                ])
            }
            XCTFail("a duplicate in the pipeline must fail")
        } catch let failure as PQPipelineError {
            XCTAssertEqual(failure.index, 2)
            XCTAssertEqual(failure.error.sqlState, "23505")
        }
        let count = try await database.pool.query("SELECT count(*) FROM items").first!.decode(Int.self, at: 0)
        XCTAssertEqual(count, 0, "nothing of a failed pipeline is written")

        let results = try await database.pool.withConnection { connection in
            try await connection.pipeline(["INSERT INTO items VALUES (\(Int32(5)))", "SELECT count(*) FROM items"])
        }
        XCTAssertEqual(try results[1].first!.decode(Int.self, at: 0), 1)
    }

    /// A setting local to a pipeline's transaction ends with it, implicit or explicit (the
    /// DPoP claim relaxes `synchronous_commit` for its own pipeline only, issue 29: were it to
    /// outlive the pipeline, every later commit on the connection would skip the standby).
    /// After a failed explicit pipeline the transaction is open and aborted; the rollback the
    /// pool makes ends it, and the setting with it.
    func testATransactionLocalSettingEndsWithItsPipeline() async throws {
        let show: PQQuery = "SHOW synchronous_commit"
        let settings = try await database.pool.withConnection { connection in
            try await connection.execute("SET synchronous_commit TO on")  // the test cluster's default is off
            let implicit = try await connection.pipeline(["SELECT set_config('synchronous_commit', 'off', true)", show])[1]
                .first!.decode(String.self, at: 0)
            let afterImplicit = try await connection.query(show).first!.decode(String.self, at: 0)
            _ = try? await connection.pipeline(["SELECT set_config('synchronous_commit', 'off', true)", "SELECT 1/0"])
            let afterImplicitFailure = try await connection.query(show).first!.decode(String.self, at: 0)
            let explicit = try await connection.pipeline(["BEGIN", "SET LOCAL synchronous_commit TO off", show, "COMMIT"])[2]
                .first!.decode(String.self, at: 0)
            let afterExplicit = try await connection.query(show).first!.decode(String.self, at: 0)
            _ = try? await connection.pipeline(["BEGIN", "SET LOCAL synchronous_commit TO off", "SELECT 1/0", "COMMIT"])
            let open = await connection.isInTransaction
            await connection.rollbackQuietly()
            let afterRollback = try await connection.query(show).first!.decode(String.self, at: 0)
            return [implicit, afterImplicit, afterImplicitFailure, explicit, afterExplicit, open ? "open" : "closed", afterRollback]
        }
        XCTAssertEqual(settings, ["off", "on", "on", "off", "on", "open", "on"])
    }

    func testListenReceivesNotifyAfterCommitOnly() async throws {
        let listener = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await listener.listen("wake_up")
        let silent = try await listener.waitForNotifications(timeout: .milliseconds(50))
        XCTAssertTrue(silent.isEmpty)
        try await database.pool.query("SELECT pg_notify('wake_up', 'hello')")
        let received = try await listener.waitForNotifications(timeout: .seconds(5))
        XCTAssertEqual(received.map(\.payload), ["hello"])
        XCTAssertEqual(received.first?.channel, "wake_up")
        await listener.close()
    }

    func testBlockingCallsDoNotOccupyTheCooperativePool() async throws {
        // 16 statements that block in libpq until cancelled. Were the blocking calls made on the
        // cooperative pool (as many threads as cores), at most that many could be in flight, and
        // this test's own polling could not run: all 16 active at once proves they block only
        // their connections' own threads. No time is measured.
        let pool = database.pool
        let sleepers = (0..<16).map { _ in Task { try await pool.query("SELECT pg_sleep(600)") } }
        let admin = try await TestDatabase.adminPool()
        let active = "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)' AND state = 'active'"
        try await Eventually.wait("16 blocking statements in flight at once") {
            try await admin.query(PQQuery(active, binds: [])).first!.decode(Int.self, at: 0) == 16
        }
        _ = try await admin.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")
        for sleeper in sleepers { _ = await sleeper.result }
        let left = try await admin.query(PQQuery(active, binds: [])).first!.decode(Int.self, at: 0)
        XCTAssertEqual(left, 0)
    }

    func testConnectionFailureIsATypedErrorNotAHang() async throws {
        let unused = "postgresql://postgres@127.0.0.1:1/none?connect_timeout=2"
        do {
            _ = try await PQConnection.connect(PQConfiguration(connectionString: unused))
            XCTFail("nothing listens on port 1")
        } catch {
            XCTAssertEqual(error.code, .connectionFailed)
        }
    }

    func testRedactedURLHidesThePassword() {
        let configuration = PQConfiguration(connectionString: "postgresql://app:s3cret@db.internal:5432/modgud")
        XCTAssertEqual(configuration.redactedDescription, "postgresql://app:***@db.internal:5432/modgud")
        XCTAssertEqual(PQConfiguration(connectionString: "host=x password=hunter2").redactedDescription, "host=x password=***")
    }
}
