import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
@testable import ModgudHTTP
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 27: one middleware records every request; static documents answered successfully are
/// summarized in the access log instead of a line each.
final class RequestObservationTests: XCTestCase {
    func testStaticDocumentsAreSummarizedAndEverythingElseIsLoggedPerRequest() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        let core = try ModgudCore(pool: database.pool, masterKey: nil)
        let logs = LogCapture()
        try await buildApplication(core: core, logger: logs.logger("modgud.http")).test(.router) { client in
            for _ in 0..<3 {
                let live = try await client.execute(uri: "/health/live", method: .get, headers: [.requestID: "probe-1"])
                XCTAssertEqual(live.status, .ok)
                XCTAssertEqual(live.headers[.requestID], "probe-1", "the request id is echoed on the lean path too")
            }
            // A static path that fails (no realm serves this host) is logged like any request.
            let missing = try await client.execute(uri: "/.well-known/openid-configuration", method: .get)
            XCTAssertEqual(missing.status, .notFound)
            XCTAssertNotNil(missing.headers[.requestID], "an id is assigned when none was sent")
            let unknown = try await client.execute(uri: "/no/such/route", method: .get)
            XCTAssertEqual(unknown.status, .notFound)
        }
        let lines = logs.text.split(separator: "\n").filter { $0.contains(" request ") }
        XCTAssertFalse(lines.contains { $0.contains("/health/live") }, "successful static documents get no line each: \(lines)")
        XCTAssertTrue(lines.contains { $0.contains("/.well-known/openid-configuration") && $0.contains("404") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("/no/such/route") && $0.contains("404") }, "\(lines)")
        await database.drop()
    }

    /// Issue 40: the caller's request id is the events' correlation id, so that an operator (or
    /// the model test of several instances) finds what one request wrote; an id that is not a
    /// plain token is replaced by one of ours, which is answered.
    func testTheCallersRequestIdIsTheEventsCorrelationId() async throws {
        let harness = try await EmailSignInHarness()
        do {
            try await harness.app.test(.router) { client in
                typealias H = EmailSignInHarness
                var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(H.adminToken)"]
                headers[.requestID] = "model-test:42"
                let path = "/admin/api/realms/dev/users"
                let given = try await H.call(client, .post, path, H.jsonBody(["Email": "correlated@example.com"]), headers: headers)
                XCTAssertEqual(given.status, .created, given.body)
                XCTAssertEqual(given.headers[.requestID], "model-test:42")
                headers[.requestID] = "two words; forged=line"
                let forged = try await H.call(client, .post, path, H.jsonBody(["Email": "other@example.com"]), headers: headers)
                XCTAssertEqual(forged.status, .created, forged.body)
                let assigned = try XCTUnwrap(forged.headers[.requestID])
                XCTAssertNotEqual(assigned, "two words; forged=line", "an id that is not a plain token is replaced")
                let ids = try await harness.database.pool.query("SELECT metadata->>'correlationID' FROM events WHERE type = 'user.registered'")
                    .rows.map { try $0.decode(String.self, at: 0) }
                XCTAssertTrue(ids.contains("model-test:42"), "\(ids)")
                XCTAssertTrue(ids.contains(assigned), "the answered id is the one recorded: \(ids)")
            }
        } catch {
            await harness.close()
            throw error
        }
        await harness.close()
    }

    func testTheSummaryCountsEachDocumentOverAWindowThenStartsAgain() {
        let summary = StaticDocumentLog()
        let logs = LogCapture()
        let logger = logs.logger("modgud.http")
        let start = ContinuousClock.now
        summary.count(.jwks, logger: logger, now: start)
        summary.count(.jwks, logger: logger, now: start + .seconds(1))
        summary.count(.live, logger: logger, now: start + .seconds(2))
        XCTAssertEqual(summary.pending, [.jwks: 2, .live: 1])
        XCTAssertFalse(logs.text.contains("static documents"), "nothing written inside the window")

        summary.count(.jwks, logger: logger, now: start + StaticDocumentLog.window + .milliseconds(1))
        let written = logs.text
        XCTAssertTrue(written.contains("static documents"), written)
        XCTAssertTrue(written.contains("/.well-known/jwks.json\": 3") || written.contains("/.well-known/jwks.json: 3"), written)
        XCTAssertTrue(written.contains("/health/live\": 1") || written.contains("/health/live: 1"), written)
        XCTAssertEqual(summary.pending, [:], "a new window starts empty")
    }
}
