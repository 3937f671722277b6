import Foundation
import XCTest

/// docs/security/bcp-checklist.md maps every applicable normative statement of RFC 9700 and
/// RFC 8252 to the test that shows it (issue 44), and every requirement of ASVS 5.0's V6 to V8
/// (issue 67) besides V9 and V10. This test keeps the map honest: every row has a verdict, an
/// `n/a:` or a `gap:` gives its reason, and every test, script or document a row cites exists,
/// a test in a file of the type it names. Renaming or deleting a cited test fails here until
/// the checklist follows.
final class SecurityChecklistTests: XCTestCase {
    static let root = SQLHomeTests.sources.deletingLastPathComponent()

    struct Row {
        var section: String
        var line: Int
        var id: String
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
            rows.append(Row(section: section, line: index + 1, id: cells[1], level: cells[2], shownBy: cells[4]))
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
        // ASVS 5.0.0's V6, V7 and V8 have 47, 19 and 13 requirements: each is a row.
        let asvs = Set(rows.filter { $0.section.hasPrefix("OWASP ASVS") }.map(\.id))
        for (chapter, count) in [("6", 47), ("7", 19), ("8", 13)] {
            XCTAssertEqual(asvs.filter { $0.hasPrefix(chapter + ".") }.count, count, "every requirement of ASVS 5.0 V\(chapter) is listed")
        }
        XCTAssertEqual(try Self.problems(rows, methods: try Self.testMethods()), [], "docs/security/bcp-checklist.md")
    }

    /// What is wrong with the rows: an unknown level, a verdict without its reason, a row that
    /// cites nothing, a cited test, script (`ops/`) or document (`docs/`) that does not exist.
    static func problems(_ rows: [Row], methods: [String: Set<String>]) throws -> [String] {
        let reference = try NSRegularExpression(pattern: #"`([^`]+)`"#)
        var problems: [String] = []
        for row in rows {
            let where_ = "line \(row.line)"
            if !["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "RECOMMENDED", "REQUIRED", "NOT RECOMMENDED", "MAY"].contains(row.level) {
                problems.append("\(where_): level \(row.level)")
            }
            if row.shownBy.hasPrefix("n/a:") || row.shownBy.hasPrefix("gap:") {
                if row.shownBy.dropFirst(4).trimmingCharacters(in: .whitespaces).isEmpty { problems.append("\(where_): \(row.shownBy) without a reason") }
                continue
            }
            let cited = reference.matches(in: row.shownBy, range: NSRange(row.shownBy.startIndex..., in: row.shownBy))
                .compactMap { Range($0.range(at: 1), in: row.shownBy).map { String(row.shownBy[$0]) } }
            if cited.isEmpty { problems.append("\(where_): no test, no n/a, no gap") }
            for name in cited {
                if name.hasPrefix("ops/") || name.hasPrefix("docs/") {
                    if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path) { problems.append("\(where_): no file \(name)") }
                    continue
                }
                let parts = name.split(separator: ".")
                guard parts.count == 2, methods[String(parts[0])]?.contains(String(parts[1])) == true else {
                    problems.append("\(where_): no test \(name)")
                    continue
                }
            }
        }
        return problems
    }

    /// The check finds a missing test: a made-up citation is reported.
    func testTheCheckFindsAMissingTest() throws {
        let rows = Self.rows("## RFC 9700\n| § | level | statement | shown by |\n|---|---|---|---|\n| 2.1 | MUST | x | `SecurityChecklistTests.testNothing` |\n")
        XCTAssertEqual(rows.map(\.shownBy), ["`SecurityChecklistTests.testNothing`"])
        let methods = try Self.testMethods()
        XCTAssertEqual(methods["SecurityChecklistTests"]?.contains("testNothing"), false)
        XCTAssertEqual(methods["SecurityChecklistTests"]?.contains("testTheCheckFindsAMissingTest"), true)
    }

    /// The check finds a verdict without its reason, a missing document and a missing test,
    /// and takes a document, a script and a test that exist.
    func testTheCheckFindsAVerdictWithoutAReasonAndAMissingDocument() throws {
        let rows = Self.rows(
            "## OWASP ASVS 5.0\n| § | level | statement | shown by |\n|---|---|---|---|\n| 6.1.2 | MUST | x | n/a: |\n| 6.1.3 | MUST | x | gap:  |\n"
                + "| 8.1.1 | MUST | x | `docs/nothing.md`, `SecurityChecklistTests.testNothing` |\n"
                + "| 8.1.2 | MUST | x | `docs/api.md`, `ops/enumeration-bench`, `SecurityChecklistTests.testTheCheckFindsAMissingTest` |\n")
        XCTAssertEqual(rows.map(\.id), ["6.1.2", "6.1.3", "8.1.1", "8.1.2"])
        XCTAssertEqual(
            try Self.problems(rows, methods: try Self.testMethods()),
            ["line 4: n/a: without a reason", "line 5: gap: without a reason", "line 6: no file docs/nothing.md", "line 6: no test SecurityChecklistTests.testNothing"])
    }
}
