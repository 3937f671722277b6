import AsyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import MailTestSupport
import ModgudDomain
@testable import ModgudService
import Synchronization
import XCTest

/// Issue 30, item 5: the guide's Python receiver (`Tests/Support/ssf_app_receiver.py`, whose
/// middle part docs/guides/shared-signals.md shows verbatim) run against a live server: it
/// creates its push stream, caches two sessions' introspections, and drops exactly the
/// session that reuse detection revoked, then the other one when the user logs out everywhere.
final class SharedSignalsGuideTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    var background: Task<Void, Never>?

    override func tearDown() async throws {
        background?.cancel()
        await background?.value
        await harness?.close()
    }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Support/ssf_app_receiver.py")
    }

    func testTheGuideShowsTheScriptsReceiveCode() throws {
        let script = try String(contentsOf: Self.script, encoding: .utf8)
        let guide = try String(
            contentsOf: Self.script.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("docs/guides/shared-signals.md"), encoding: .utf8)
        let start = try XCTUnwrap(script.range(of: "# --- guide: receive ---\n"))
        let end = try XCTUnwrap(script.range(of: "# --- end guide ---"))
        let shown = String(script[start.upperBound..<end.lowerBound])
        XCTAssertTrue(guide.contains(shown), "docs/guides/shared-signals.md shows the receive code as the tested script has it")
    }

    func testTheGuidesReceiverDropsTheRevokedSessionAndThenTheRest() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let (_, secret) = try await harness.core.administration.clients.create(
            realm: "dev", id: "api",
            settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["ssf.manage"]), metadata: .init())
        let userID = try await harness.registerUser("ada@example.com")
        background = SignalBackground.start(harness.core)
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = try PythonProcess(
                Self.script.path, "http://localhost:\(port)", "api", try XCTUnwrap(secret), String(try SMTPSink.freePort()))
            _ = try await app.line("the stream") { $0["stream_id"] != nil }
            var sessions: [(access: String, refresh: String)] = []
            for number in 1...2 {
                _ = try await H.requestCode(server, "ada@example.com")
                let tokens = try await H.redeemCode(server, "ada@example.com", try await harness.code(for: "ada@example.com", number: number))
                sessions.append((try XCTUnwrap(tokens.json["access_token"] as? String), try XCTUnwrap(tokens.json["refresh_token"] as? String)))
                harness.clock.advance(121)
            }
            for session in sessions { app.send(session.access) }
            let cached = try await app.lines("two cached sessions", count: 2) { $0["cached"] is String }
            let first = try XCTUnwrap(cached.first?["cached"] as? String)
            try await SharedSignalsTests.triggerReuse(server, refresh: sessions[0].refresh, harness: harness)
            let dropped = try await app.line("the revoked session dropped") { $0["dropped"] != nil }
            XCTAssertEqual(dropped["dropped"] as? String, first, "exactly the session reuse detection revoked")
            XCTAssertEqual(try app.received().filter { $0["dropped"] != nil }.count, 1, "the other session stays cached")
            _ = try await harness.core.administration.users.apply(.logoutEverywhere, realm: "dev", userID: userID, metadata: .init())
            _ = try await app.lines("both sessions dropped", count: 2) { $0["dropped"] != nil }
        }
    }
}

/// A Python script as a child process that takes lines on standard input and prints JSON lines.
final class PythonProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private final class Lines: Sendable {
        let value = Mutex<[String]>([])
    }

    private let output = Lines()

    init(_ arguments: String...) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardInput = input
        process.standardOutput = pipe
        try process.run()
        let handle = pipe.fileHandleForReading
        let output = self.output
        Thread.detachNewThread {
            while let line = handle.readLine() { output.value.withLock { $0.append(line) } }
        }
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Every JSON line printed so far.
    func received() throws -> [[String: Any]] {
        output.value.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func line(_ what: String, _ matches: @escaping @Sendable ([String: Any]) -> Bool) async throws -> [String: Any] {
        try await lines(what, count: 1, matches)[0]
    }

    func lines(_ what: String, count: Int, _ matches: @escaping @Sendable ([String: Any]) -> Bool) async throws -> [[String: Any]] {
        try await Eventually.value(what) { () -> UncheckedLines? in
            let found = try self.received().filter(matches)
            return found.count >= count ? UncheckedLines(lines: found) : nil
        }.lines
    }

    struct UncheckedLines: @unchecked Sendable {
        var lines: [[String: Any]]
    }
}
