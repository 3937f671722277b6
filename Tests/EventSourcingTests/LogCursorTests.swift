import EventSourcing
import XCTest

final class LogCursorTests: XCTestCase {
    func testCursorOrdersByTransactionThenPosition() {
        let early = LogCursor(transactionID: 10, position: 99)
        let late = LogCursor(transactionID: 11, position: 5)
        XCTAssertLessThan(early, late, "a later transaction sorts after even with a smaller position")
        XCTAssertLessThan(LogCursor.start, early)
    }

    func testCursorTextRoundTripsAndRejectsGarbage() {
        let cursor = LogCursor(transactionID: 123_456, position: 789)
        XCTAssertEqual(cursor.description, "123456:789")
        XCTAssertEqual(LogCursor("123456:789"), cursor)
        for bad in ["", "1", "1:", ":1", "a:b", "1:2:3", "-1:2", "1:-2"] {
            XCTAssertNil(LogCursor(bad), bad)
        }
    }
}
