import AsyncTestSupport
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// A pipeline's statements answer before its implicit transaction commits: the commit's own
/// answer comes at the sync point. A pipeline is a success only once that answer says so.
final class PQPipelineCommitTests: XCTestCase {
    /// A commit that fails after every statement succeeded (a deferred constraint is checked
    /// at commit) rolls the whole pipeline back: the caller must hear it, not get the rows.
    func testAFailedCommitAtTheSyncPointFailsThePipeline() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        defer { Task { await database.drop() } }
        try await database.pool.query(
            "CREATE TABLE items (id int CONSTRAINT items_once UNIQUE DEFERRABLE INITIALLY DEFERRED)")
        do {
            _ = try await database.pool.pipeline(["INSERT INTO items VALUES (1)", "INSERT INTO items VALUES (1)"])
            XCTFail("the commit failed, so the pipeline must fail")
        } catch let error as PQError {
            XCTAssertEqual(error.sqlState, "23505")
            XCTAssertEqual(error.constraint, "items_once")
        }
        let count = try await database.pool.query("SELECT count(*)::int FROM items").first!.decode(Int.self, at: 0)
        XCTAssertEqual(count, 0)
        // The connection is usable again.
        let rows = try await database.pool.pipeline(["INSERT INTO items VALUES (2)", "SELECT count(*)::int FROM items"])
        XCTAssertEqual(try rows[1].first!.decode(Int.self, at: 0), 1)
    }

    /// The failover case (issue 49): a primary whose commit waits for a synchronous standby
    /// that never answers, and whose backend is then terminated (a fast shutdown, or the
    /// postmaster's death). PostgreSQL has committed locally but sends no answer; a standby
    /// promoted now lacks the transaction. The statements' own results had all arrived, so
    /// before this test the pipeline was reported as committed, and a grant answered 200 with
    /// a token the new primary never had (4 and 15 such tokens in `ops/failover-test` runs).
    func testAPipelineWhoseCommitNeverAnswersThrowsConnectionLost() async throws {
        let database = try await RestartableDatabase(maxConnections: 4)
        let admin = database.makePool(maxConnections: 2)
        defer {
            Task {
                await admin.close()
                await database.destroy()
            }
        }
        try await database.pool.query("CREATE TABLE items (id int PRIMARY KEY)")
        try await admin.query("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
        try await admin.query("SELECT pg_reload_conf()")
        // A pipeline, and a lone statement (whose implicit transaction commits after its rows
        // too), each on the connection's thread and in place (by the calling task).
        let next = "INSERT INTO items SELECT coalesce(max(id), 0) + 1 FROM items RETURNING id"
        let variants: [(name: String, inPlace: Bool, run: @Sendable (PQConnection) async throws -> Int)] = [
            ("pipeline", false, { try await $0.pipeline([PQQuery(next, binds: []), "SELECT count(*)::int FROM items"]).count }),
            ("query", false, { try await $0.query(PQQuery(next, binds: [])).count }),
            ("pipelineInPlace", true, { try await $0.pipelineInPlace([PQQuery(next, binds: []), "SELECT count(*)::int FROM items"]).count }),
            ("queryInPlace", true, { try await $0.queryInPlace(PQQuery(next, binds: [])).count }),
        ]
        for variant in variants {
            let connection = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
            try await connection.query(PQQuery(next, binds: []))  // prepared, so a lone statement can run in place
            try await connection.execute("SET synchronous_commit TO on")  // the test cluster's default is off
            let pid = Int(await connection.backendPID)
            let running = Task { try await variant.run(connection) }
            try await Eventually.wait("\(variant.name): the commit waits for the standby") {
                let waiting = try await admin.query(
                    PQQuery("SELECT count(*)::int FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'", pid))
                return try waiting.first!.decode(Int.self, at: 0) == 1
            }
            if variant.inPlace {
                // The connection's thread is free while the task waits: an actor call answers
                // now (on the thread's path it would wait for the statement to end).
                let answered = await connection.backendPID
                XCTAssertEqual(Int(answered), pid)
            }
            try await admin.query(PQQuery("SELECT pg_terminate_backend($1::int)", pid))
            do {
                let rows = try await running.value
                XCTFail("\(variant.name): the commit never answered, yet the statements returned \(rows) results")
            } catch {
                let lost = (error as? PQPipelineError)?.error ?? (error as? PQError)
                XCTAssertEqual(lost?.code, .connectionLost, "\(variant.name): \(error)")
                XCTAssertEqual(lost?.meansDatabaseUnavailable, true)
            }
            await connection.close()
        }
        try await admin.query("ALTER SYSTEM RESET synchronous_standby_names")
        try await admin.query("SELECT pg_reload_conf()")
    }
}
