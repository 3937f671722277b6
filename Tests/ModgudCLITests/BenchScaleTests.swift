import Foundation
import XCTest

/// `modgud bench scale` (issue 70) as a smoke run: a small log, every part of the report.
final class BenchScaleTests: XCTestCase {
    func testAScaleRunReportsEveryPartAtEverySize() throws {
        let runner = CLIRunner(databaseURL: "postgresql://unused@127.0.0.1:1/none")
        let outcome = try runner.run([
            "bench", "scale", "--events", "2000", "--rotations", "5", "--step", "40", "--passkey-every", "20", "--seconds", "1",
            "--connections", "2", "--data-dir", "/var/tmp/modgud-bench-scale-test",
        ])
        XCTAssertEqual(outcome.status, 0, outcome.output + outcome.error)
        let output = outcome.output
        let sections = output.components(separatedBy: "\n== ").dropFirst()
        XCTAssertEqual(sections.count, 2, "the empty store, then 2,000 events: \(output)")
        let filled = try XCTUnwrap(output.range(of: #"filled to (\d+) events"#, options: .regularExpression).map { String(output[$0]) })
        XCTAssertGreaterThanOrEqual(Int(filled.split(separator: " ")[2]) ?? 0, 2000, filled)
        for section in sections {
            let lines = section.split(separator: "\n")
            let refresh = try XCTUnwrap(lines.first { $0.hasPrefix("refresh ") }, section).split(separator: " ", omittingEmptySubsequences: true)
            XCTAssertGreaterThan(Double(refresh[1]) ?? 0, 0, "refreshes answered: \(section)")
            XCTAssertEqual(refresh[4], "0", "no errors: \(section)")
            XCTAssertTrue(lines.contains { $0.hasPrefix("rebuilt tokens: ") }, section)
            let verified = try XCTUnwrap(lines.first { $0.hasPrefix("audit verify: ") }, section)
            XCTAssertTrue(verified.hasSuffix(": OK"), String(verified))
            let events = try XCTUnwrap(lines.first { $0.hasPrefix("events ") }, "the size table lists the log: \(section)")
            XCTAssertGreaterThan(Double(events.split(separator: " ", omittingEmptySubsequences: true)[2]) ?? 0, 0, String(events))
            XCTAssertTrue(lines.contains { $0.hasPrefix("server RSS ") }, section)
        }
        // The aged sessions' leaves were all integrated before the second measurement: it checked more leaves.
        let leaves = sections.compactMap { section in
            section.split(separator: "\n").first { $0.hasPrefix("audit verify: ") }.flatMap { Int($0.split(separator: " ")[2]) }
        }
        XCTAssertEqual(leaves.count, 2)
        XCTAssertGreaterThan(leaves[1], leaves[0] + 1000, "\(leaves)")
    }
}
