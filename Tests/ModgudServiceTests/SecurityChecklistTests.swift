import Foundation
import XCTest

/// docs/security/bcp-checklist.md maps every applicable normative statement of RFC 9700 and
/// RFC 8252 to the test that shows it (issue 44). This test keeps the map honest: every row
/// has a verdict, and every test or script a row cites exists, in a file of the type it
/// names. Renaming or deleting a cited test fails here until the checklist follows.
final class SecurityChecklistTests: XCTestCase {
    static let root = SQLHomeTests.sources.deletingLastPathComponent()

    struct Row {
        var section: String
        var line: Int
        var level: String
        var shownBy: String
    }

    /// The table rows of the checklist, by its `## ` section.
    static func rows(_ text: String) -> [Row] {
        var section = ""
        var rows: [Row] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("## ") { section = String(line.dropFirst(3)) }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard line.hasPrefix("|"), cells.count >= 6, cells[1] != "§", !cells[1].hasPrefix("---") else { continue }
            rows.append(Row(section: section, line: index + 1, level: cells[2], shownBy: cells[4]))
        }
        return rows
    }

    /// Every `func test…` of every test type, by type (classes and their extensions).
    static func testMethods() throws -> [String: Set<String>] {
        let tests = root.appendingPathComponent("Tests")
        let enumerator = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)!
        let declaration = try NSRegularExpression(pattern: #"^(?:final )?(?:class|extension) (\w+)"#, options: .anchorsMatchLines)
        let method = try NSRegularExpression(pattern: #"func (test\w+)\("#)
        var methods: [String: Set<String>] = [:]
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let code = try String(contentsOf: url, encoding: .utf8)
            let range = NSRange(code.startIndex..., in: code)
            let types = declaration.matches(in: code, range: range).compactMap { Range($0.range(at: 1), in: code).map { String(code[$0]) } }
            let names = method.matches(in: code, range: range).compactMap { Range($0.range(at: 1), in: code).map { String(code[$0]) } }
            for type in types { methods[type, default: []].formUnion(names) }
        }
        return methods
    }

    func testEveryRowHasAVerdictAndEveryCitedTestExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/security/bcp-checklist.md"), encoding: .utf8)
        let rows = Self.rows(text)
        XCTAssertGreaterThan(rows.filter { $0.section.hasPrefix("RFC 9700") }.count, 30, "RFC 9700's statements are listed")
        XCTAssertGreaterThan(rows.filter { $0.section.hasPrefix("RFC 8252") }.count, 8, "RFC 8252's statements are listed")
        let methods = try Self.testMethods()
        let reference = try NSRegularExpression(pattern: #"`([^`]+)`"#)
        var problems: [String] = []
        for row in rows {
            let where_ = "line \(row.line)"
            if !["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "RECOMMENDED", "REQUIRED", "NOT RECOMMENDED", "MAY"].contains(row.level) {
                problems.append("\(where_): level \(row.level)")
            }
            if row.shownBy.hasPrefix("n/a:") || row.shownBy.hasPrefix("gap:") { continue }
            let cited = reference.matches(in: row.shownBy, range: NSRange(row.shownBy.startIndex..., in: row.shownBy))
                .compactMap { Range($0.range(at: 1), in: row.shownBy).map { String(row.shownBy[$0]) } }
            if cited.isEmpty { problems.append("\(where_): no test, no n/a, no gap") }
            for name in cited {
                if name.hasPrefix("ops/") {
                    if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path) { problems.append("\(where_): no script \(name)") }
                    continue
                }
                let parts = name.split(separator: ".")
                guard parts.count == 2, methods[String(parts[0])]?.contains(String(parts[1])) == true else {
                    problems.append("\(where_): no test \(name)")
                    continue
                }
            }
        }
        XCTAssertEqual(problems, [], "docs/security/bcp-checklist.md")
    }

    /// The check finds a missing test: a made-up citation is reported.
    func testTheCheckFindsAMissingTest() throws {
        let rows = Self.rows("## RFC 9700\n| § | level | statement | shown by |\n|---|---|---|---|\n| 2.1 | MUST | x | `SecurityChecklistTests.testNothing` |\n")
        XCTAssertEqual(rows.map(\.shownBy), ["`SecurityChecklistTests.testNothing`"])
        let methods = try Self.testMethods()
        XCTAssertEqual(methods["SecurityChecklistTests"]?.contains("testNothing"), false)
        XCTAssertEqual(methods["SecurityChecklistTests"]?.contains("testTheCheckFindsAMissingTest"), true)
    }
}
