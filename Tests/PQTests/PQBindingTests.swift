import Foundation
import PQ
import PostgresTestSupport
import XCTest

/// Values go to the server as parameters and come back as the same Swift values.
final class PQBindingTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 4)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testEveryTypeRoundTripsThroughBindParameters() async throws {
        let id = UUID()
        let when = Date(timeIntervalSince1970: 1_763_000_000.123456)
        let bytes = PQBytes([0, 1, 2, 0xfe, 0xff])
        let text = "it's \"quoted\" \\ and ünïcødé 🔑"
        let row = try await database.pool.query(
            """
            SELECT \(text)::text, \(Int64.max)::bigint, \(Int32(-7))::int, \(true)::bool, \(id)::uuid,
                   \(bytes)::bytea, \(PQJSON("{\"a\": [1, 2]}"))::jsonb, \(when)::timestamptz, \(String?.none)::text
            """
        ).first!
        XCTAssertEqual(try row.decode(String.self, at: 0), text)
        XCTAssertEqual(try row.decode(Int64.self, at: 1), Int64.max)
        XCTAssertEqual(try row.decode(Int32.self, at: 2), -7)
        XCTAssertEqual(try row.decode(Bool.self, at: 3), true)
        XCTAssertEqual(try row.decode(UUID.self, at: 4), id)
        XCTAssertEqual(try row.decode(PQBytes.self, at: 5), bytes)
        XCTAssertEqual(try row.decode(PQJSON.self, at: 6).text, "{\"a\": [1, 2]}")
        let decodedDate = try row.decode(Date.self, at: 7)
        XCTAssertEqual(decodedDate.timeIntervalSince1970, when.timeIntervalSince1970, accuracy: 0.000001)
        XCTAssertNil(try row.decode(String?.self, at: 8))
        XCTAssertThrowsError(try row.decode(String.self, at: 8), "NULL only decodes into an optional")
    }

    func testInjectionAttemptIsAValueNotSQL() async throws {
        try await database.pool.query("CREATE TABLE notes (body text)")
        let hostile = "x'); DROP TABLE notes; --"
        try await database.pool.query("INSERT INTO notes (body) VALUES (\(hostile))")
        let body = try await database.pool.query("SELECT body FROM notes").first!.decode(String.self, at: 0)
        XCTAssertEqual(body, hostile)
        let statement: PQQuery = "SELECT \(hostile)"
        XCTAssertEqual(statement.sql, "SELECT $1", "the value never enters the SQL text")
    }

    func testArraysBindWithQuotingAndNulls() async throws {
        let values = ["a", "b\"c", "d\\e", "{f,g}"]
        let row = try await database.pool.query("SELECT cardinality(\(values)::text[]), (\(values)::text[])[2], (\(values)::text[])[4]").first!
        XCTAssertEqual(try row.decode(Int.self, at: 0), 4)
        XCTAssertEqual(try row.decode(String.self, at: 1), "b\"c")
        XCTAssertEqual(try row.decode(String.self, at: 2), "{f,g}")
        // Escaping works on UTF-8 bytes: multi-byte text, JSON and empty strings come back as sent.
        let mixed = ["", "é漢🙂\"\\", #"{"k":"v \"q\"","n":[1,2]}"#, "NULL", " "]
        for (index, value) in mixed.enumerated() {
            let element = try await database.pool.query("SELECT (\(mixed)::text[])[\(Int32(index + 1))]").first!
            XCTAssertEqual(try element.decode(String.self, at: 0), value)
        }
    }

    func testTimestampsBeforeEpochAndAtMidnight() throws {
        for seconds in [-86_400.5, 0, 951_782_400, 4_102_444_800.000001] {
            let date = Date(timeIntervalSince1970: seconds)
            let text = PQTimestamp.format(date)
            let parsed = text.utf8.withContiguousStorageIfAvailable { PQTimestamp.parse($0) } ?? PQTimestamp.parse(Array(text.utf8))
            XCTAssertEqual(parsed!.timeIntervalSince1970, seconds, accuracy: 0.000002, text)
        }
        XCTAssertEqual(PQTimestamp.format(Date(timeIntervalSince1970: 951_782_400)), "2000-02-29 00:00:00.000000+00")
    }

    func testDecodingTheWrongTypeNamesTheColumn() async throws {
        let row = try await database.pool.query("SELECT 'abc' AS label").first!
        XCTAssertThrowsError(try row.decode(Int64.self, "label")) { error in
            XCTAssertEqual((error as? PQError)?.code, .decoding)
            XCTAssertTrue("\(error)".contains("label"), "\(error)")
        }
    }
}
