import AsyncTestSupport
import EventSourcing
@testable import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// Issue 27: group commit. Appends queued while a commit runs share the next one, each keeps its
/// own expected version and its own rejection, and a batch is one transaction.
///
/// The batches are made deterministic without timing: the store has one lane, and an append
/// to the stream `gate` holds it, waiting on a row lock an outside transaction holds, until
/// every racing append is queued behind it.
final class GroupCommitTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!
    var batcher: AppendBatcher { store.batcher! }

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 10)
        try await database.pool.query(StreamTotals.createTable)
        try await database.pool.query("CREATE TABLE used_codes (code text PRIMARY KEY)")
        store = PostgresEventStore(
            pool: database.pool, inlineProjections: [StreamTotals()], groupCommit: .init(lanes: 1, maxAppends: 64))
        _ = try await store.append([try counted(1)], to: stream("gate"), expected: .noStream, metadata: .none)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// Occupies the only lane until the returned connection commits.
    private func holdTheLane() async throws -> (blocker: PQConnection, held: Task<[RecordedEvent], any Error>) {
        let blocker = try await PQConnection.connect(PQConfiguration(connectionString: database.url))
        try await blocker.execute("BEGIN")
        try await blocker.query("SELECT version FROM streams WHERE id = 'counter-gate' FOR UPDATE")
        let store = store!
        let held = Task { try await store.append([try counted(1)], to: stream("gate"), expected: .exact(1), metadata: .none) }
        try await Eventually.wait("the gate's append waits for the row lock") {
            try await self.database.pool.count(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()") == 1
        }
        return (blocker, held)
    }

    private func release(_ blocker: PQConnection, after queued: Int) async throws {
        try await Eventually.wait("\(queued) appends queued behind the gate") { self.batcher.queued == queued }
        try await blocker.execute("COMMIT")
        await blocker.close()
    }

    func testALoneAppendCommitsAtOnceInABatchOfOne() async throws {
        _ = try await store.append([try counted(2)], to: stream("alone"), expected: .noStream, metadata: .none)
        XCTAssertEqual(batcher.snapshot.commitsBySize, [2], "setUp's append and this one: two commits of one append each")
    }

    func testABatchIsOneTransactionAndKeepsEveryAppendsEvents() async throws {
        let (blocker, held) = try await holdTheLane()
        let store = store!
        let appends = (0..<20).map { index in
            Task { try await store.append([try counted(index), try counted(100)], to: stream("new-\(index)"), expected: .noStream, metadata: .none) }
        }
        try await release(blocker, after: 20)
        _ = try await held.value
        var transactions = Set<UInt64>()
        for (index, append) in appends.enumerated() {
            let recorded = try await append.value
            XCTAssertEqual(recorded.map(\.streamVersion), [1, 2])
            XCTAssertEqual(try recorded[0].envelope.decode(Counted.self).n, index, "each caller gets its own events back")
            transactions.formUnion(recorded.map(\.transactionID))
        }
        XCTAssertEqual(transactions.count, 1, "the 20 appends committed in one transaction")
        XCTAssertEqual(batcher.snapshot.commitsBySize.count, 20, "the largest commit carried 20 appends")
        XCTAssertEqual(batcher.snapshot.commitsBySize[19], 1)
        let totals = try await database.pool.count("SELECT count(*) FROM stream_totals WHERE stream_id LIKE 'counter-new-%' AND events = 2")
        XCTAssertEqual(totals, 20, "every append's inline projection ran")
    }

    /// Conflicts and a single-use violation race inside one batch: exactly the expected appends
    /// fail, each with its own error, and nothing of theirs is written.
    func testManyAppendsRacingInOneBatchFailExactlyAsTheyWouldAlone() async throws {
        for key in 0..<10 {
            _ = try await store.append([try counted(1)], to: stream("raced-\(key)"), expected: .noStream, metadata: .none)
        }
        let (blocker, held) = try await holdTheLane()
        let store = store!
        // Three appends per stream, all expecting version 1: one may win.
        let conflicting = (0..<30).map { index in
            Task { try await store.append([try counted(10)], to: stream("raced-\(index % 10)"), expected: .exact(1), metadata: .none) }
        }
        // Five new streams that each consume the same single-use code: one may win.
        let consuming = (0..<5).map { index in
            Task {
                try await store.append(
                    [try counted(1)], to: stream("consumer-\(index)"), expected: .noStream, metadata: .none,
                    alsoExecuting: ["INSERT INTO used_codes (code) VALUES (\("the-code"))"])
            }
        }
        // Ten appends that conflict with nothing.
        let innocent = (0..<10).map { index in
            Task { try await store.append([try counted(1)], to: stream("innocent-\(index)"), expected: .noStream, metadata: .none) }
        }
        try await release(blocker, after: 45)
        _ = try await held.value

        var winners = [String: Int]()
        for append in conflicting {
            do {
                let recorded = try await append.value
                winners[recorded[0].stream.id, default: 0] += 1
            } catch EventStoreError.wrongExpectedVersion(let stream, _, let actual) {
                XCTAssertEqual(actual, 2, "\(stream) lost to the append that won it")
            }
        }
        XCTAssertEqual(winners, Dictionary(uniqueKeysWithValues: (0..<10).map { ("counter-raced-\($0)", 1) }), "one winner per stream")
        var consumed = 0
        for append in consuming {
            do {
                _ = try await append.value
                consumed += 1
            } catch let error as PQError {
                XCTAssertEqual(error.constraint, "used_codes_pkey", "the loser's own rejection")
            }
        }
        XCTAssertEqual(consumed, 1, "the code was used once")
        for append in innocent { _ = try await append.value }

        XCTAssertEqual(batcher.snapshot.commitsBySize.count, 45, "the 45 appends met in one batch")
        let consumers = try await database.pool.count("SELECT count(*) FROM streams WHERE id LIKE 'counter-consumer-%'")
        XCTAssertEqual(consumers, 1, "the losers' streams were never created")
        let raced = try await database.pool.count("SELECT sum(events) FROM stream_totals WHERE stream_id LIKE 'counter-raced-%'")
        XCTAssertEqual(raced, 20, "each raced stream: its first event and one winner's")
        let events = try await database.pool.count("SELECT count(*) FROM events WHERE stream_id LIKE 'counter-raced-%'")
        XCTAssertEqual(events, 20)
    }
}
