import EventStorePostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
import ModgudService
import PQ
import PostgresTestSupport
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
        let daemonTask = Task { await daemon.run() }

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
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(3), "fails fast, not after a long wait")
            let ready = try await client.execute(uri: "/health/ready", method: .get)
            XCTAssertEqual(ready.status, .serviceUnavailable)
            XCTAssertTrue(String(buffer: ready.body).contains("unreachable"), String(buffer: ready.body))

            try await Task.sleep(for: .seconds(2))  // the daemon meets the outage too
            try database.start()
            let restarted = ContinuousClock.now
            var recovered: (status: HTTPResponse.Status, json: [String: Any], retryAfter: String?)? = nil
            while ContinuousClock.now - restarted < .seconds(15) {
                let attempt = try await refresh()
                if attempt.status == .ok {
                    recovered = attempt
                    break
                }
                XCTAssertEqual(attempt.status, .serviceUnavailable, "only 503 while recovering")
                try await Task.sleep(for: .milliseconds(100))
            }
            let recovery = ContinuousClock.now - restarted
            XCTAssertNotNil(recovered, "serves again without a restart")
            print("database restart: serving again \(recovery) after PostgreSQL accepted connections")
            let readyAgain = try await client.execute(uri: "/health/ready", method: .get)
            XCTAssertEqual(readyAgain.status, .ok, String(buffer: readyAgain.body))
        }
        // The daemon survived the outage and applies what was appended after it.
        XCTAssertFalse(daemonTask.isCancelled)
        let checkpointAfter = { () async throws -> Int in
            try await database.pool.query("SELECT coalesce(sum(applied), 0)::bigint FROM checkpoints").first!.decode(Int.self, at: 0)
        }
        let eventCount = try await database.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
        var applied = 0
        for _ in 0..<100 {
            applied = try await checkpointAfter()
            if applied >= eventCount * ProjectionCatalog.asynchronous.count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(applied, eventCount * ProjectionCatalog.asynchronous.count, "every event applied by the daemon after the restart")
        daemonTask.cancel()
        await daemonTask.value
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
}
