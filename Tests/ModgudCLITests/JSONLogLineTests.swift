import Foundation
@testable import ModgudCLI
import XCTest

/// The production log line (issue 27 renders it by hand): still one valid JSON object per line.
final class JSONLogLineTests: XCTestCase {
    func testEveryFieldSurvivesAJSONParserWhateverItHolds() throws {
        let awkward = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} nul \u{00} é ✓ 🙂"
        let line = JSONLogLine.render([("message", awkward), ("path", "/connect/token"), ("a", "first"), ("status", "100"), ("status", "200")])
        XCTAssertFalse(line.contains(UInt8(ascii: "\n")), "one record is one line")
        let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line)) as? [String: String])
        XCTAssertEqual(parsed, ["message": awkward, "path": "/connect/token", "a": "first", "status": "200"], "the later status wins")
        XCTAssertEqual(String(decoding: line, as: UTF8.self).components(separatedBy: "\"status\"").count, 2, "each key once")
        let text = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix(#"{"a":"first","message":"#), "keys sorted: \(text)")
        XCTAssertTrue(text.contains(#""path":"/connect/token""#), "slashes unescaped")
    }

    func testTheTimestampIsRFC3339UTCWithMilliseconds() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        for seconds in [0.0, 1_795_000_000.0625, 1_795_000_000.125, 951_782_400.5, 4_102_444_799.25, 86_399.0078125] {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(JSONLogLine.timestamp(date), date.formatted(style), "\(seconds)")
        }
    }
}
