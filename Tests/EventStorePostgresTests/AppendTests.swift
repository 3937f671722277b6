import EventSourcing
@testable import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import XCTest

final class AppendTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 40)
        store = PostgresEventStore(pool: database.pool)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testAppendAssignsContiguousVersionsAndReadsBack() async throws {
        let metadata = EventMetadata(correlationID: "req-1", causationID: "cmd-1", actor: "user:42", clientIP: "203.0.113.9")
        let first = try await store.append([try counted(1), try counted(2)], to: stream("a"), expected: .noStream, metadata: metadata)
        XCTAssertEqual(first.map(\.streamVersion), [1, 2])
        XCTAssertLessThan(first[0].position, first[1].position)
        let second = try await store.append([try NewEvent(Noted(text: "hi \"there\""))], to: stream("a"), expected: .exact(2), metadata: .none)
        XCTAssertEqual(second.map(\.streamVersion), [3])

        let read = try await store.readStream("counter-a", after: 0)
        XCTAssertEqual(read.map(\.streamVersion), [1, 2, 3])
        XCTAssertEqual(read[0].metadata, metadata)
        XCTAssertEqual(try read[1].envelope.decode(Counted.self), Counted(n: 2))
        XCTAssertEqual(try read[2].envelope.decode(Noted.self), Noted(text: "hi \"there\""))
        XCTAssertEqual(read[0].position, first[0].position)
        XCTAssertEqual(read[0].transactionID, first[0].transactionID)

        let tail = try await store.readStream("counter-a", after: 2)
        XCTAssertEqual(tail.map(\.streamVersion), [3])
        let log = try await store.readAll(after: .start, limit: 10, filter: .all)
        XCTAssertEqual(log.map(\.position), read.map(\.position))
        let afterFirst = try await store.readAll(after: log[0].cursor, limit: 10, filter: .all)
        XCTAssertEqual(afterFirst.count, 2)
        let version = try await store.version(of: "counter-a")
        XCTAssertEqual(version, 3)
    }

    func testWrongExpectedVersionIsAConflictWithTheActualVersion() async throws {
        _ = try await store.append([try counted(1)], to: stream("b"), expected: .noStream, metadata: .none)
        for expected in [ExpectedVersion.noStream, .exact(2), .exact(7)] {
            do {
                _ = try await store.append([try counted(9)], to: stream("b"), expected: expected, metadata: .none)
                XCTFail("expected \(expected) must conflict")
            } catch let error as EventStoreError {
                XCTAssertEqual(error, .wrongExpectedVersion(stream: "counter-b", expected: expected, actual: 1))
            }
        }
        do {
            _ = try await store.append([try counted(1)], to: stream("missing"), expected: .exact(1), metadata: .none)
            XCTFail("a stream that does not exist is not at version 1")
        } catch let error as EventStoreError {
            XCTAssertEqual(error, .wrongExpectedVersion(stream: "counter-missing", expected: .exact(1), actual: 0))
        }
        let events = try await store.readStream("counter-b", after: 0)
        XCTAssertEqual(events.count, 1, "failed appends wrote nothing")
    }

    func testThirtyTwoConcurrentAppendsAtOneVersionExactlyOneWins() async throws {
        _ = try await store.append([try counted(0)], to: stream("race"), expected: .noStream, metadata: .none)
        let store = self.store!
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    do {
                        _ = try await store.append([try counted(index)], to: stream("race"), expected: .exact(1), metadata: .none)
                        return true
                    } catch EventStoreError.wrongExpectedVersion(_, _, let actual) {
                        XCTAssertEqual(actual, 2)
                        return false
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 1)
        XCTAssertEqual(outcomes.filter { !$0 }.count, 31)
        let versions = try await store.readStream("counter-race", after: 0).map(\.streamVersion)
        XCTAssertEqual(versions, [1, 2])
    }

    func testConcurrentCreatorsOfOneStreamExactlyOneWins() async throws {
        let store = self.store!
        let wins = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    do {
                        _ = try await store.append([try counted(1)], to: stream("new"), expected: .noStream, metadata: .none)
                        return 1
                    } catch EventStoreError.wrongExpectedVersion(let stream, let expected, let actual) {
                        // The losers meet the winner's stream: a version conflict, nothing else.
                        XCTAssertEqual(stream, "counter-new")
                        XCTAssertEqual(expected, .noStream)
                        XCTAssertEqual(actual, 1)
                        return 0
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        XCTAssertEqual(wins, 1)
    }

    func testEmptyAppendIsRefused() async throws {
        do {
            _ = try await store.append([], to: stream("empty"), expected: .noStream, metadata: .none)
            XCTFail("an append needs events")
        } catch let error as EventStoreError {
            XCTAssertEqual(error, .emptyAppend(stream: "counter-empty"))
        }
    }

    func testReadAllFiltersByRealmStreamAndType() async throws {
        _ = try await store.append([try counted(1)], to: stream("x", realm: "one"), expected: .noStream, metadata: .none)
        _ = try await store.append([try NewEvent(Noted(text: "n"))], to: stream("y", realm: "two"), expected: .noStream, metadata: .none)
        _ = try await store.append([try counted(2)], to: stream("z", realm: "two"), expected: .noStream, metadata: .none)
        let realmTwo = try await store.readAll(after: .start, limit: 10, filter: LogFilter(realm: "two"))
        XCTAssertEqual(realmTwo.map(\.stream.id), ["counter-y", "counter-z"])
        let counted = try await store.readAll(after: .start, limit: 10, filter: LogFilter(types: [Counted.eventType]))
        XCTAssertEqual(counted.map(\.stream.id), ["counter-x", "counter-z"])
        let one = try await store.readAll(after: .start, limit: 10, filter: LogFilter(streamID: "counter-y"))
        XCTAssertEqual(one.map(\.type), [Noted.eventType])
        let limited = try await store.readAll(after: .start, limit: 2, filter: .all)
        XCTAssertEqual(limited.count, 2)
    }

    func testReadingAnUnregisteredTypeFailsNamingIt() async throws {
        _ = try await store.append([try NewEvent(Noted(text: "?"))], to: stream("u"), expected: .noStream, metadata: .none)
        var registry = EventTypeRegistry()
        registry.register(Counted.self)
        let recorded = try await store.readStream("counter-u", after: 0)[0]
        XCTAssertThrowsError(try registry.decode(recorded)) { error in
            XCTAssertEqual(error as? EventDecodingError, .unknownType(name: "test.noted", revision: 1))
            XCTAssertTrue("\(error)".contains("test.noted"))
        }
    }

    func testSecondInstanceSeesTheSameStreamVersion() async throws {
        let other = PostgresEventStore(pool: database.makePool())
        _ = try await store.append([try counted(1)], to: stream("shared"), expected: .noStream, metadata: .none)
        do {
            _ = try await other.append([try counted(2)], to: stream("shared"), expected: .noStream, metadata: .none)
            XCTFail("the second instance must see the stream exists")
        } catch let error as EventStoreError {
            XCTAssertEqual(error, .wrongExpectedVersion(stream: "counter-shared", expected: .noStream, actual: 1))
        }
        _ = try await other.append([try counted(2)], to: stream("shared"), expected: .exact(1), metadata: .none)
        await other.pool.close()
    }
}
