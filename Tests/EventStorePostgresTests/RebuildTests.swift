import EventSourcing
import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

final class RebuildTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!
    let async = AppliedLog()
    let inline = StreamTotals()

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        try await database.pool.query(async.createTable)
        try await database.pool.query(StreamTotals.createTable)
        store = PostgresEventStore(pool: database.pool, inlineProjections: [inline])
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    private func snapshot(_ sql: PQQuery) async throws -> [String] {
        let result = try await database.pool.query(sql)
        return try result.rows.map { row in
            try (0..<result.columns.count).map { try row.decode(String?.self, at: $0) ?? "NULL" }.joined(separator: "|")
        }
    }

    private func appendMixed(_ count: Int) async throws {
        for index in 0..<count {
            let key = "k\(index % 7)"
            let version = try await store.version(of: "counter-\(key)")
            let event = index % 5 == 0 ? try NewEvent(Noted(text: "n\(index)")) : try counted(index)
            _ = try await store.append([event], to: stream(key), expected: ExpectedVersion(current: version), metadata: .none)
        }
    }

    func testRebuildEqualsContinuousOperation() async throws {
        try await appendMixed(300)
        let daemon = ProjectionDaemon(pool: database.pool, projections: [async], batchSize: 40)
        try await daemon.catchUp()
        let asyncBefore = try await snapshot("SELECT stream_id, version, type, n, times FROM applied_log ORDER BY 1, 2")
        let inlineBefore = try await snapshot("SELECT stream_id, realm, events, total, version FROM stream_totals ORDER BY 1")
        XCTAssertEqual(asyncBefore.count, 300)
        XCTAssertEqual(inlineBefore.count, 7)

        let rebuilder = ProjectionRebuilder(pool: database.pool, batchSize: 64)
        let progress = ProgressLog()
        let report = try await rebuilder.rebuild(async) { value in progress.record(value.applied) }
        XCTAssertEqual(report.events, 300)
        XCTAssertFalse(progress.values.isEmpty)
        _ = try await rebuilder.rebuild(inline)

        let asyncAfter = try await snapshot("SELECT stream_id, version, type, n, times FROM applied_log ORDER BY 1, 2")
        let inlineAfter = try await snapshot("SELECT stream_id, realm, events, total, version FROM stream_totals ORDER BY 1")
        XCTAssertEqual(asyncAfter, asyncBefore)
        XCTAssertEqual(inlineAfter, inlineBefore)

        // The async checkpoint moved to the end: the daemon continues without re-applying.
        _ = try await store.append([try counted(1)], to: stream("after"), expected: .noStream, metadata: .none)
        try await daemon.catchUp()
        let maxTimes = try await database.pool.count("SELECT max(times) FROM applied_log")
        let rows = try await database.pool.count("SELECT count(*) FROM applied_log")
        XCTAssertEqual(maxTimes, 1)
        XCTAssertEqual(rows, 301)
        let indexes = try await database.pool.count(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'stream_totals'")
        XCTAssertEqual(indexes, 1, "the primary key came along with the new table")
    }

    func testFoldingProjectionRebuildsToWhatTheDaemonBuilt() async throws {
        try await appendMixed(250)
        let statistics = LogStatisticsProjection()
        let daemon = ProjectionDaemon(pool: database.pool, projections: [statistics], batchSize: 33)
        try await daemon.catchUp()
        let continuous = try await snapshot("SELECT realm, type, events FROM log_statistics ORDER BY 1, 2")
        XCTAssertEqual(continuous, ["default|test.counted|200", "default|test.noted|50"])
        _ = try await ProjectionRebuilder(pool: database.pool, batchSize: 7).rebuild(statistics)
        let rebuilt = try await snapshot("SELECT realm, type, events FROM log_statistics ORDER BY 1, 2")
        XCTAssertEqual(rebuilt, continuous)
    }

    func testInlineRebuildWhileAppendsContinueMatchesTheLog() async throws {
        try await appendMixed(100)
        let store = self.store!
        let writers = Task {
            for index in 0..<150 {
                let key = "live\(index % 3)"
                let version = try await store.version(of: "counter-\(key)")
                _ = try await store.append([try counted(index)], to: stream(key), expected: ExpectedVersion(current: version), metadata: .none)
            }
        }
        _ = try await ProjectionRebuilder(pool: database.pool, batchSize: 16).rebuild(inline)
        try await writers.value
        // Recompute the expected read model straight from the events table.
        let expected = try await snapshot(
            """
            SELECT stream_id, realm, count(*)::text, sum((payload->>'n')::bigint)::text, max(stream_version)::text
            FROM events WHERE type = 'test.counted' GROUP BY stream_id, realm ORDER BY 1
            """)
        let actual = try await snapshot("SELECT stream_id, realm, events, total, version FROM stream_totals ORDER BY 1")
        XCTAssertEqual(actual, expected)
    }

    func testAnInsertOnlyTableIsRebuiltWithEveryIndexItHad() async throws {
        for statement in CountedRows.createTable {
            try await database.pool.query(statement)
        }
        let rows = CountedRows()
        let store = PostgresEventStore(pool: database.pool, inlineProjections: [inline, rows])
        for index in 0..<120 {
            let key = "k\(index % 5)"
            let version = try await store.version(of: "counter-\(key)")
            _ = try await store.append([try counted(index * 10)], to: stream(key), expected: ExpectedVersion(current: version), metadata: .none)
        }
        // Index definitions without their names (PostgreSQL names the rebuilt ones itself).
        let definitions: PQQuery = """
            SELECT regexp_replace(pg_get_indexdef(indexrelid), 'INDEX \\S+ ON', 'INDEX ON') FROM pg_index
            WHERE indrelid = 'counted_rows'::regclass ORDER BY 1
            """
        let keys: PQQuery = "SELECT contype::text FROM pg_constraint WHERE conrelid = 'counted_rows'::regclass ORDER BY 1"
        let before = try await snapshot(definitions)
        let keysBefore = try await snapshot(keys)
        let content = try await snapshot("SELECT stream_id, version, n FROM counted_rows ORDER BY 1, 2")
        XCTAssertEqual(before.count, 3)
        XCTAssertEqual(content.count, 120)

        // Twice: the second rebuild's indexes are named beside the first one's, still live.
        for _ in 0..<2 {
            let report = try await ProjectionRebuilder(pool: database.pool, batchSize: 16).rebuild(rows)
            XCTAssertEqual(report.events, 120)
        }
        let after = try await snapshot(definitions)
        let keysAfter = try await snapshot(keys)
        let rebuilt = try await snapshot("SELECT stream_id, version, n FROM counted_rows ORDER BY 1, 2")
        XCTAssertEqual(after, before)
        XCTAssertEqual(keysAfter, keysBefore)
        XCTAssertEqual(rebuilt, content)
        // The rebuilt unique indexes hold: a duplicate key is refused, as before the rebuild.
        do {
            try await database.pool.query("INSERT INTO counted_rows (stream_id, version, n) SELECT stream_id, version, 7 FROM counted_rows LIMIT 1")
            XCTFail("the rebuilt primary key must refuse a duplicate")
        } catch is PQError {}
        do {
            try await database.pool.query("INSERT INTO counted_rows (stream_id, version, n) VALUES ('x', 1, 1100)")
            XCTFail("the rebuilt partial unique index must refuse a duplicate")
        } catch is PQError {}
    }

    func testRebuildIsRefusedWhileSomeoneElseHoldsTheProjection() async throws {
        let holder = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await holder.query("SELECT pg_advisory_lock(hashtextextended('modgud.projection/applied_log', 0))")
        do {
            _ = try await ProjectionRebuilder(pool: database.pool).rebuild(async)
            XCTFail("the rebuild must be refused")
        } catch let error as ProjectionRebuildError {
            XCTAssertEqual(error, .busy(projection: "applied_log"))
        }
        // Released by the holder itself: a closed connection's backend lets go of its locks
        // only once the server has noticed the close, which is no moment a test can wait for.
        try await holder.query("SELECT pg_advisory_unlock(hashtextextended('modgud.projection/applied_log', 0))")
        await holder.close()
        let report = try await ProjectionRebuilder(pool: database.pool).rebuild(async)
        XCTAssertEqual(report.events, 0)
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Int] = []
    func record(_ value: Int) { lock.withLock { recorded.append(value) } }
    var values: [Int] { lock.withLock { recorded } }
}
