import EventSourcing
import EventStorePostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 10: spent one-shot streams (passkey ceremonies, email challenges) are pruned after
/// their retention; identity streams never are; replay and rebuilds stay correct.
final class LogRetentionTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    private func streamCounts(_ pool: PQPool) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try await pool.query("SELECT type, count(*)::bigint FROM streams GROUP BY type").rows {
            counts[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        return counts
    }

    private func rows(_ pool: PQPool, _ sql: PQQuery) async throws -> [String] {
        try await pool.query(sql).rows.map { try $0.decode(String.self, at: 0) }
    }

    func testPruneRemovesOnlySpentOneShotStreamsAndRebuildsStillEqualContinuousState() async throws {
        harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        let harness = self.harness!
        let pool = harness.database.pool
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com")
            let signedIn = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(signedIn.status, .ok)
            _ = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"ada@example.com"}"#, headers: H.json)
            _ = try await harness.magicLink(for: "ada@example.com")
            for _ in 0..<3 {
                let begun = try await H.call(client, .post, "/connect/passkey/begin", "", headers: H.form)
                XCTAssertEqual(begun.status, .ok)
            }
        }
        let daemon = ProjectionDaemon(pool: pool, projections: ProjectionCatalog.asynchronous)
        try await daemon.catchUp()
        let before = try await streamCounts(pool)
        XCTAssertEqual(before["passkey-ceremony"], 3)
        XCTAssertEqual(before["email-challenge"], 2, "the address's codes and the user's links")
        let identityBefore = try await rows(pool, "SELECT id || ':' || version FROM streams WHERE type NOT IN ('passkey-ceremony', 'email-challenge') ORDER BY 1")

        let retention = LogRetention.oneShotStreams(pool: pool, maxAge: .seconds(30 * 86_400))
        let early = try await retention.prune(now: Date().addingTimeInterval(29 * 86_400))
        XCTAssertEqual(early, .init(streams: 0, events: 0), "nothing is pruned before its retention")
        let pruned = try await retention.prune(now: Date().addingTimeInterval(31 * 86_400))
        XCTAssertEqual(pruned.streams, 5)
        let after = try await streamCounts(pool)
        XCTAssertNil(after["passkey-ceremony"])
        XCTAssertNil(after["email-challenge"])
        let identityAfter = try await rows(
            pool, "SELECT id || ':' || version FROM streams WHERE type NOT IN ('passkey-ceremony', 'email-challenge', 'auditlog') ORDER BY 1")
        XCTAssertEqual(identityAfter, identityBefore, "user, client, realm and token-family streams are untouched")
        // The prune recorded itself for the audit log: one event, and a record per removed event.
        let operation = try await rows(pool, "SELECT type || ' ' || (payload->>'operation') || ' ' || (payload->>'removed') FROM events WHERE stream_type = 'auditlog'")
        XCTAssertEqual(operation, ["AuditLogRedacted retention \(pruned.events)"])
        let records = try await pool.query("SELECT count(*) FROM audit_redactions WHERE kind = 'removed'").first!.decode(Int.self, at: 0)
        XCTAssertEqual(records, pruned.events)
        let orphans = try await pool.query(
            "SELECT count(*) FROM events WHERE stream_type IN ('passkey-ceremony', 'email-challenge')").first!.decode(Int.self, at: 0)
        XCTAssertEqual(orphans, 0)

        // log_statistics counts the log as it now is, and a rebuild of every projection equals
        // what continuous operation (plus the prune) left.
        try await daemon.catchUp()
        let statistics = "SELECT realm || '|' || type || '|' || events FROM log_statistics WHERE events > 0 ORDER BY 1" as PQQuery
        let logAsIs = try await rows(pool, "SELECT realm || '|' || type || '|' || count(*) FROM events GROUP BY realm, type ORDER BY 1")
        let continuous = try await rows(pool, statistics)
        XCTAssertEqual(continuous, logAsIs)
        var identityTables: [String: [String]] = [:]
        for projection in ProjectionCatalog.identity {
            for table in projection.tables { identityTables[table] = try await rows(pool, "SELECT t::text FROM \(identifier: table) t ORDER BY 1") }
        }
        for projection in ProjectionCatalog.all {
            _ = try await ProjectionRebuilder(pool: pool).rebuild(projection)
        }
        let rebuiltStatistics = try await rows(pool, statistics)
        XCTAssertEqual(rebuiltStatistics, continuous)
        for (table, expected) in identityTables {
            let rebuilt = try await rows(pool, "SELECT t::text FROM \(identifier: table) t ORDER BY 1")
            XCTAssertEqual(rebuilt.map(Self.withoutTimes), expected.map(Self.withoutTimes), table)
        }
        // The whole log still replays, in order.
        let replayed = try await harness.core.store.readAll(after: .start, limit: 10_000, filter: .all)
        let eventCount = try await harness.eventCount()
        XCTAssertEqual(replayed.count, eventCount)

        // The same address signs in again: its code stream is gone, and this instance's cached
        // actor for it starts over from what the store holds.
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com", number: 2)  // the second code mail (a link came between)
            let again = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(again.status, .ok, "\(again.json)")
        }
    }

    /// Rows as text without the database's own `now()` columns, which a rebuild sets anew.
    static func withoutTimes(_ row: String) -> String {
        row.replacing(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00/, with: "T")
    }
}
