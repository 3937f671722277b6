import EventSourcing
import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

final class InlineProjectionTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 10)
        try await database.pool.query(StreamTotals.createTable)
        try await database.pool.query("CREATE TABLE outbox (body text NOT NULL)")
        store = PostgresEventStore(pool: database.pool, inlineProjections: [StreamTotals()])
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testInlineProjectionIsVisibleTheMomentTheAppendReturns() async throws {
        _ = try await store.append([try counted(5), try counted(6)], to: stream("a"), expected: .noStream, metadata: .none)
        let row = try await database.pool.query("SELECT events, total, version FROM stream_totals WHERE stream_id = 'counter-a'").first
        XCTAssertEqual(try row?.decode(Int.self, at: 0), 2)
        XCTAssertEqual(try row?.decode(Int.self, at: 1), 11)
        XCTAssertEqual(try row?.decode(Int.self, at: 2), 2)
        _ = try await store.append([try NewEvent(Noted(text: "ignored"))], to: stream("a"), expected: .exact(2), metadata: .none)
        let events = try await database.pool.count("SELECT events FROM stream_totals WHERE stream_id = 'counter-a'")
        XCTAssertEqual(events, 2, "the projection reads only the types it declares")
    }

    func testFailingInlineProjectionWritesNothingAtAll() async throws {
        _ = try await store.append([try counted(1)], to: stream("b"), expected: .noStream, metadata: .none)
        do {
            // total would exceed the CHECK constraint: the projection's statement fails.
            _ = try await store.append(
                [try counted(2_000_000)], to: stream("b"), expected: .exact(1), metadata: .none,
                alsoExecuting: ["INSERT INTO outbox (body) VALUES (\("mail"))"])
            XCTFail("the projection's failure must fail the append")
        } catch let error as EventStoreError {
            guard case .inlineProjectionFailed(let name, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(name, "stream_totals")
        }
        let events = try await database.pool.count("SELECT count(*) FROM events WHERE stream_id = 'counter-b'")
        let version = try await database.pool.count("SELECT version FROM streams WHERE id = 'counter-b'")
        let outbox = try await database.pool.count("SELECT count(*) FROM outbox")
        let total = try await database.pool.count("SELECT total FROM stream_totals WHERE stream_id = 'counter-b'")
        XCTAssertEqual(events, 1)
        XCTAssertEqual(version, 1)
        XCTAssertEqual(outbox, 0)
        XCTAssertEqual(total, 1)
    }

    func testExtraStatementsCommitWithTheEvents() async throws {
        _ = try await store.append(
            [try counted(1)], to: stream("c"), expected: .noStream, metadata: .none,
            alsoExecuting: ["INSERT INTO outbox (body) VALUES (\("welcome"))"])
        let outbox = try await database.pool.count("SELECT count(*) FROM outbox WHERE body = 'welcome'")
        XCTAssertEqual(outbox, 1)
        do {
            _ = try await store.append(
                [try counted(1)], to: stream("c"), expected: .noStream, metadata: .none,
                alsoExecuting: ["INSERT INTO outbox (body) VALUES (\("never"))"])
            XCTFail("conflict expected")
        } catch is EventStoreError {}
        let never = try await database.pool.count("SELECT count(*) FROM outbox WHERE body = 'never'")
        XCTAssertEqual(never, 0, "a conflicting append does not write its extra statements")
    }
}
