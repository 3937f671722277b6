import Foundation
import XCTest

/// The layering and size rules of docs/architecture.md ("House habits"), checked over the
/// source text as `SQLHomeTests` checks where SQL lives (issue 42).
final class ArchitectureFitnessTests: XCTestCase {
    /// The HTTP adapter talks to services: it names neither the PostgreSQL client nor the
    /// event store (their errors and counters reach it through `StoreFailure`).
    func testTheHTTPAdapterImportsNeitherTheStoreNorItsClient() throws {
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("ModgudHTTP/") }
        XCTAssertGreaterThan(files.count, 20, "the check is looking at the wrong files")
        let offenders = files.filter { file in
            file.code.split(separator: "\n").contains { ["import PQ", "import EventStorePostgres", "import CLibPQ"].contains($0.trimmingCharacters(in: .whitespaces)) }
        }.map(\.path)
        XCTAssertEqual(offenders, [], "ModgudHTTP reaches storage")
    }

    /// Files that are parsers, whose long functions follow a grammar step by step.
    static let parsers = ["CBOR/", "ModgudHTTP/FormBody.swift", "ModgudHTTP/StrictJSON.swift"]

    /// No function, initializer or subscript body over 60 lines outside the parsers.
    func testNoFunctionIsLongerThanSixtyLines() throws {
        var long: [String] = []
        for (path, code) in try SQLHomeTests.files() where !Self.parsers.contains(where: path.hasPrefix) {
            for function in Self.functions(in: code) where function.lines > 60 {
                long.append("\(path):\(function.line) \(function.lines) lines: \(function.signature)")
            }
        }
        XCTAssertEqual(long, [], "functions over 60 lines (docs/architecture.md)")
    }

    /// The check measures: a 61-line function is found, a one-line one is not.
    func testTheLengthCheckFindsALongFunction() {
        let body = (0..<59).map { "        let x\($0) = \($0)" }.joined(separator: "\n")
        let code = "struct A {\n    func short() { }\n    func long() {\n\(body)\n    }\n}"
        XCTAssertEqual(Self.functions(in: code).map(\.lines), [1, 61])
    }

    /// Each declaration of a function, initializer or subscript, from its first line to the
    /// closing brace at its indentation.
    static func functions(in code: String) -> [(line: Int, lines: Int, signature: String)] {
        let lines = code.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let declaration = try! NSRegularExpression(
            pattern: #"^(\s*)(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|class|final|override|mutating|nonisolated|convenience|required)\s+)*(?:func\s|init[(?<]|subscript[(<])"#)
        var found: [(Int, Int, String)] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard let match = declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                let indentRange = Range(match.range(at: 1), in: line)
            else {
                index += 1
                continue
            }
            let indent = line[indentRange].count
            var open = index
            while open < lines.count, !lines[open].contains("{") { open += 1 }
            guard open < lines.count else { break }
            if lines[open].trimmingCharacters(in: .whitespaces).hasSuffix("}") {
                found.append((index + 1, open - index + 1, line.trimmingCharacters(in: .whitespaces)))
                index = open + 1
                continue
            }
            var close = open + 1
            while close < lines.count {
                let candidate = lines[close]
                if candidate.trimmingCharacters(in: .whitespaces).hasPrefix("}"), candidate.prefix(while: { $0 == " " }).count == indent { break }
                close += 1
            }
            found.append((index + 1, close - index + 1, line.trimmingCharacters(in: .whitespaces)))
            index = open + 1
        }
        return found
    }
}

extension ArchitectureFitnessTests {
    /// A status is never chosen by the wording of an error's code (issue 42): a refusal's kind
    /// is stated where it is raised.
    func testNoStatusIsChosenByAnErrorCodesWording() throws {
        let guesses = try SQLHomeTests.files().filter { $0.code.contains("code.hasSuffix(") || $0.code.contains("code.hasPrefix(") }.map(\.path)
        XCTAssertEqual(guesses, [], "a status guessed from a code's text")
    }
}

extension ArchitectureFitnessTests {
    /// No controller is another's helper (issue 42): a controller's type is named only in its
    /// own files (`AdminController+Realms.swift`) and where the routes are composed.
    func testNoControllerIsAnothersHelper() throws {
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("ModgudHTTP/") }
        let declared = try NSRegularExpression(pattern: #"\bstruct (\w+Controller)\b"#)
        var controllers: Set<String> = []
        for file in files {
            for match in declared.matches(in: file.code, range: NSRange(file.code.startIndex..., in: file.code)) {
                if let range = Range(match.range(at: 1), in: file.code) { controllers.insert(String(file.code[range])) }
            }
        }
        XCTAssertGreaterThan(controllers.count, 10, "the check is looking at the wrong text")
        var borrowed: [String] = []
        for controller in controllers.sorted() {
            let named = try NSRegularExpression(pattern: #"\b"# + controller + #"\b"#)
            for file in files where named.firstMatch(in: file.code, range: NSRange(file.code.startIndex..., in: file.code)) != nil {
                let name = (file.path as NSString).lastPathComponent
                guard !name.hasPrefix(controller + ".") && !name.hasPrefix(controller + "+") && name != "Application+build.swift" else { continue }
                borrowed.append("\(controller) in \(file.path)")
            }
        }
        XCTAssertEqual(borrowed, [], "a controller used by another")
    }
}

extension ArchitectureFitnessTests {
    /// No service hands its connection pool out (issue 68, item 6): callers get what a
    /// service does, never its database. The test harnesses' databases are the exception.
    func testNoServiceExposesItsPool() throws {
        let exposed = try NSRegularExpression(pattern: #"public (let|var) pool\b"#)
        let files = try SQLHomeTests.files().filter { !$0.path.hasPrefix("PostgresTestSupport/") }
        XCTAssertGreaterThan(files.count, 100, "the check is looking at the wrong files")
        let offenders = files.filter { exposed.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path)
        XCTAssertEqual(offenders, [], "a public pool")
    }

    /// HTTP calls services; it never reaches through one to the composition behind it
    /// (issue 42: `admin.core.…`).
    func testHTTPDoesNotReachThroughAServiceToTheComposition() throws {
        let reaches = try SQLHomeTests.files().filter { $0.path.hasPrefix("ModgudHTTP/") && $0.code.contains("admin.core") }.map(\.path)
        XCTAssertEqual(reaches, [], "HTTP reaching through Administration")
    }
}

extension ArchitectureFitnessTests {
    /// Where the composition is built and taken apart into services: its own files and the
    /// start-ups of the server (one database, or the cells: issue 71), `modgud dev`, the admin
    /// commands and the load bench.
    static let compositionSites: Set<String> = [
        "ModgudService/ModgudCore.swift", "ModgudService/ModgudCore+Background.swift", "ModgudService/ModgudCore+Services.swift", "ModgudHTTP/Application+build.swift",
        "ModgudCLI/ServeCommand.swift", "ModgudCLI/DevCommand.swift", "ModgudCLI/Server.swift", "ModgudCLI/AdminContext.swift",
        "ModgudCLI/Bench/LoadEnvironment.swift", "ModgudHTTP/Application+cells.swift", "ModgudCLI/CellServing.swift",
    ]

    /// Only the composition names the composition type (issue 42): everything else is handed
    /// the services it uses.
    func testOnlyTheCompositionNamesTheCompositionType() throws {
        let named = try NSRegularExpression(pattern: #"\bModgudCore\b"#)
        let files = try SQLHomeTests.files()
        let naming = Set(files.filter { named.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path))
        XCTAssertTrue(naming.contains("ModgudService/ModgudCore.swift"), "the check is looking at the wrong text")
        XCTAssertEqual(naming.subtracting(Self.compositionSites).sorted(), [], "the composition named outside its start-ups")
    }

    /// No type keeps the composition after start-up (issue 42): no stored property holds it.
    func testNoTypeKeepsTheComposition() throws {
        let stored = try NSRegularExpression(pattern: #"^\s*(?:(?:public|private|internal|package|fileprivate)\s+)?(?:let|var)\s+\w+\s*:\s*ModgudCore\b"#, options: [.anchorsMatchLines])
        let keepers = try SQLHomeTests.files().filter { stored.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path)
        XCTAssertEqual(keepers, [], "a type that keeps the composition")
        let sample = "struct A {\n    public let core: ModgudCore\n}"
        XCTAssertNotNil(stored.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)), "the check finds a keeper")
    }
}

extension ArchitectureFitnessTests {
    /// Services translate domain refusals (`ServiceRefusal.translating`): the adapters render
    /// `ServiceRefusal` by kind and never see `DomainError` (issue 42).
    func testTheAdaptersNeverSeeADomainError() throws {
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("ModgudHTTP/") || $0.path.hasPrefix("ModgudCLI/") }
        XCTAssertGreaterThan(files.count, 40, "the check is looking at the wrong files")
        let naming = files.filter { $0.code.contains("DomainError") }.map(\.path)
        XCTAssertEqual(naming, [], "an adapter handling a domain refusal")
    }
}
