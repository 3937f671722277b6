import AsyncTestSupport
import EventStorePostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// Issue 10: the database may go away. Requests fail fast with 503 while it is down, the
/// background services keep running, and the instance serves again without a restart.
final class ResilienceTests: XCTestCase {
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// A realm with a public client, a user and one sign-in; returns its refresh token.
    static func seed(_ core: ModgudCore) async throws -> String {
        try await TestRealm.signIn(core, try await TestRealm.seed(core)).refreshToken!
    }

    func testADatabaseRestartGives503ThenTheInstanceRecoversOnItsOwn() async throws {
        let database = try await RestartableDatabase()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 4, count: 32))
        let firstToken = try await Self.seed(core)
        // The projection daemon runs beside the server, as in `modgud serve`.
        let daemon = ProjectionDaemon(pool: database.pool, projections: ProjectionCatalog.asynchronous, pollInterval: .milliseconds(100))
        let outages = OutageCount()
        let daemonTask = Task { await daemon.run { _, _ in outages.record() } }
        // And the audit log's integrator (issue 28), its loop as `serve` runs it.
        let auditLog = AuditLogIntegrator(pool: database.pool, signer: core.auditKeys, settings: .init(gather: .zero))
        let auditOutages = OutageCount()
        let auditTask = Task { await auditLog.run(pollInterval: .milliseconds(100)) { _, _ in auditOutages.record() } }

        try await buildApplication(core: core, server: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            var refreshToken = firstToken
            func refresh() async throws -> (status: HTTPResponse.Status, json: [String: Any], retryAfter: String?) {
                let response = try await client.execute(
                    uri: "/connect/token", method: .post, headers: Self.form,
                    body: ByteBuffer(string: "grant_type=refresh_token&client_id=app&refresh_token=\(refreshToken)"))
                let json = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:]
                return (response.status, json, response.headers[.retryAfter])
            }
            let before = try await refresh()
            XCTAssertEqual(before.status, .ok)
            refreshToken = before.json["refresh_token"] as! String

            try database.stop()
            let started = ContinuousClock.now
            let down = try await refresh()
            XCTAssertEqual(down.status, .serviceUnavailable)
            XCTAssertEqual(down.json["error"] as? String, "temporarily_unavailable")
            XCTAssertEqual(down.retryAfter, "2")
            // Printed, not asserted: how fast a refused connection fails depends on the machine's load.
            print("database down: 503 after \(ContinuousClock.now - started)")
            // (An answer from before the outage may be reused for a second: polled.)
            let ready = try await Eventually.value("readiness reports the outage", every: .milliseconds(100)) {
                let answer = try await client.execute(uri: "/health/ready", method: .get)
                return answer.status == .serviceUnavailable ? answer : nil
            }
            XCTAssertTrue(String(buffer: ready.body).contains("unreachable"), String(buffer: ready.body))

            // The daemon meets the outage too (it reports it) before the database comes back.
            try await Eventually.wait("the projection daemon met the outage") { outages.count > 0 }
            try await Eventually.wait("the audit log integrator met the outage") { auditOutages.count > 0 }
            try database.start()
            let restarted = ContinuousClock.now
            let recovered = try await Eventually.value("serving again without a restart", every: .milliseconds(100)) {
                let attempt = try await refresh()
                XCTAssertTrue([.ok, .serviceUnavailable].contains(attempt.status), "only 503 while recovering, got \(attempt.status)")
                return attempt.status == .ok ? attempt : nil
            }
            XCTAssertNotNil(recovered.json["access_token"])
            let recovery = ContinuousClock.now - restarted
            print("database restart: serving again \(recovery) after PostgreSQL accepted connections")
            // Readiness answers are reused for a second (`ReadinessProbe.cacheFor`): the one taken
            // during the outage may still be served, so the probe is polled until it turns.
            try await Eventually.wait("ready again", every: .milliseconds(100)) {
                try await client.execute(uri: "/health/ready", method: .get).status == .ok
            }
        }
        // The daemon survived the outage and applies what was appended after it.
        XCTAssertFalse(daemonTask.isCancelled)
        // Each projection counts the events of its own types (all of them when it names none).
        let checkpointAfter = { () async throws -> Int in
            try await database.pool.query(
                "SELECT coalesce(sum(applied), 0)::bigint FROM checkpoints WHERE projection <> \(AuditLogIntegrator.name)"
            ).first!.decode(Int.self, at: 0)
        }
        let eventCount = try await database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        var expected = 0
        for projection in ProjectionCatalog.asynchronous {
            let types = projection.eventTypes.map { Array($0).sorted() }
            expected += try await database.pool.query(
                "SELECT count(*) FROM events WHERE \(types)::text[] IS NULL OR type = ANY(\(types))"
            ).first!.decode(Int.self, at: 0)
        }
        XCTAssertGreaterThan(expected, 0)
        try await Eventually.wait("every event applied by the daemon after the restart", every: .milliseconds(100)) {
            try await checkpointAfter() >= expected
        }
        let applied = try await checkpointAfter()
        XCTAssertEqual(applied, expected, "each event applied once by each projection that handles it")
        // The integrator survived it too: every event, before and after, is one leaf.
        XCTAssertFalse(auditTask.isCancelled)
        try await Eventually.wait("every event a leaf of the audit log after the restart", every: .milliseconds(100)) {
            try await database.pool.query("SELECT count(*) FROM audit_leaves").first!.decode(Int.self, at: 0) == eventCount
        }
        daemonTask.cancel()
        auditTask.cancel()
        await daemonTask.value
        await auditTask.value
        await database.destroy()
    }

    func testPoolDiscardsBrokenConnectionsAndReconnects() async throws {
        let database = try await RestartableDatabase(maxConnections: 4)
        // Fill the pool with idle connections, then restart the server under them.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await database.pool.query("SELECT pg_sleep(0.05)") } }
            try await group.waitForAll()
        }
        XCTAssertEqual(database.pool.statistics.open, 4)
        try database.stop()
        do {
            _ = try await database.pool.query("SELECT 1")
            XCTFail("the server is down")
        } catch {
            XCTAssertTrue(PQError.meansDatabaseUnavailable(error), "\(error)")
        }
        try database.start()
        for _ in 0..<8 {
            let one = try await database.pool.query("SELECT 1").first!.decode(Int.self, at: 0)
            XCTAssertEqual(one, 1)
        }
        await database.destroy()
    }

    /// Issue 42: the console's rebuild runner outlives a database outage. A rebuild asked for
    /// while PostgreSQL is down fails and says so; the runner keeps running, and the same
    /// rebuild asked again once the database is back finishes.
    func testTheRebuildRunnerOutlivesADatabaseOutage() async throws {
        let database = try await RestartableDatabase(maxConnections: 4)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let runner = core.operations.rebuilds
        let running = Task { await runner.run() }
        try database.stop()
        XCTAssertEqual(core.operations.startRebuild("log_statistics"), true)
        try await Eventually.wait("the rebuild during the outage fails and says so") {
            runner.progress("log_statistics").map { $0.finished && $0.failure != nil } ?? false
        }
        try database.start()
        XCTAssertEqual(core.operations.startRebuild("log_statistics"), true, "a finished rebuild may be asked again")
        try await Eventually.wait("the rebuild after the outage finishes") {
            runner.progress("log_statistics").map { $0.finished && $0.failure == nil } ?? false
        }
        XCTAssertNil(core.operations.startRebuild("no_such_projection"))
        runner.finish()
        await running.value
        await database.destroy()
    }
}

/// Counts the outages the projection daemon reported.
private final class OutageCount: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func record() { value.withLock { $0 += 1 } }
}
