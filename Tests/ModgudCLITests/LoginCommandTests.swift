import AsyncTestSupport
import Foundation
import MailTestSupport
import PostgresTestSupport
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 15, item 3: `modgud login`, `modgud token` and `modgud logout`, played as a terminal
/// user against a running `modgud serve` that delivers the code over SMTP.
final class LoginCommandTests: XCTestCase {
    var database: TestDatabase!
    var sink: SMTPSink!
    var server: CLIRunner.Launched?
    var home: URL!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 8)
        sink = try SMTPSink()
        home = FileManager.default.temporaryDirectory.appendingPathComponent("modgud-login-\(UUID().uuidString)")
    }

    override func tearDown() async throws {
        if let server {
            server.process.terminate()
            _ = server.finish()
        }
        sink?.stop()
        await database?.drop()
        try? FileManager.default.removeItem(at: home)
    }

    func testATerminalUserLogsInGetsATokenAndLogsOut() async throws {
        let cli = CLIRunner(databaseURL: database.url)
        try cli.ok(["migrate"])
        try cli.ok(["realm", "create", "acme", "--host", "localhost", "--native-grants", "true", "--registration", "JitOnOtp"])
        try cli.ok(["realm", "rotate-key", "acme"])
        try cli.ok(["client", "create", "acme", "cli", "--grant", "urn:cocoar:otp", "--grant", "refresh_token", "--scope", "openid", "--scope", "offline_access"])
        let port = try SMTPSink.freePort()
        server = try cli.launch(
            ["serve"],
            environment: [
                "MODGUD_PORT": "\(port)", "MODGUD_ISSUER_SCHEME": "http", "MODGUD_SMTP_HOST": "127.0.0.1", "MODGUD_SMTP_PORT": "\(sink.port)",
                "MODGUD_SMTP_SECURITY": "none", "MODGUD_MAIL_FROM": "no-reply@acme.test",
                // Its tasks on NIO's event loops (issue 49): every request below runs there.
                "MODGUD_GLOBAL_EXECUTOR": "nio",
            ])
        let issuer = "http://localhost:\(port)"
        try await Self.waitUntilReady(issuer)
        let environment = ["XDG_CONFIG_HOME": home.path]

        // The user types the code from the mail at the prompt.
        let login = try cli.launch(["login", "--issuer", issuer, "--client-id", "cli", "--email", "ada@example.com"], environment: environment)
        let code = try await code(for: "ada@example.com")
        login.input.fileHandleForWriting.write(Data("\(code)\n".utf8))
        let loggedIn = login.finish()
        XCTAssertEqual(loggedIn.status, 0, loggedIn.error)
        XCTAssertTrue(loggedIn.output.contains("Signed in as ada@example.com"), loggedIn.output)
        XCTAssertTrue(loggedIn.error.contains("Code: "), "the prompt goes to standard error")
        let file = home.appendingPathComponent("modgud/session.json").path
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)

        // `modgud token` prints a live access token: the server accepts it.
        let token = try cli.run(["token"], environment: environment)
        XCTAssertEqual(token.status, 0, token.error)
        let access = token.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let accepted = try await Self.userinfoStatus(issuer, access)
        XCTAssertEqual(accepted, 200)

        // `modgud logout` revokes it at the server.
        let logout = try cli.run(["logout"], environment: environment)
        XCTAssertEqual(logout.status, 0, logout.error)
        let revoked = try await Self.userinfoStatus(issuer, access)
        XCTAssertEqual(revoked, 401, "revoked")
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        let after = try cli.run(["token"], environment: environment)
        XCTAssertNotEqual(after.status, 0)
        XCTAssertTrue(after.error.contains("not signed in: run modgud login"), after.error)

        // A wrong code three times: refused, nothing stored.
        let wrong = try cli.launch(["login", "--issuer", issuer, "--client-id", "cli", "--email", "ada@example.com"], environment: environment)
        _ = try await self.code(for: "ada@example.com", number: 2)
        wrong.input.fileHandleForWriting.write(Data("000000\n000001\n000002\n".utf8))
        let refused = wrong.finish()
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.error.contains("invalid code"), refused.error)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))

        // `login --dpop` (issue 29): the session is bound to a key kept beside it (0600); the
        // token alone is refused as Bearer, and `token --header-for` gives the DPoP headers.
        let bound = try cli.launch(["login", "--issuer", issuer, "--client-id", "cli", "--email", "ada@example.com", "--dpop"], environment: environment)
        bound.input.fileHandleForWriting.write(Data("\(try await self.code(for: "ada@example.com", number: 3))\n".utf8))
        let boundLogin = bound.finish()
        XCTAssertEqual(boundLogin.status, 0, boundLogin.error)
        XCTAssertTrue(boundLogin.output.contains("bound to the DPoP key"), boundLogin.output)
        let keyFile = home.appendingPathComponent("modgud/session.dpop-key").path
        let keyMode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(keyMode.intValue & 0o777, 0o600, "the key is its owner's only")
        let boundToken = try cli.run(["token"], environment: environment)
        XCTAssertTrue(boundToken.error.contains("DPoP-bound"), boundToken.error)
        let downgraded = try await Self.userinfoStatus(issuer, boundToken.output.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(downgraded, 401, "a bound token is no bearer token")
        let printed = try cli.run(["token", "--header-for", issuer + "/connect/userinfo"], environment: environment)
        XCTAssertEqual(printed.status, 0, printed.error)
        var request = URLRequest(url: URL(string: issuer + "/connect/userinfo")!)
        for line in printed.output.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            request.setValue(parts[1], forHTTPHeaderField: parts[0])
        }
        XCTAssertTrue(request.value(forHTTPHeaderField: "Authorization")?.hasPrefix("DPoP ") == true, printed.output)
        let (_, proven) = try await URLSession.shared.data(for: request)
        XCTAssertEqual((proven as? HTTPURLResponse)?.statusCode, 200, "the printed proof is good for that request")
        let boundLogout = try cli.run(["logout"], environment: environment)
        XCTAssertEqual(boundLogout.status, 0, boundLogout.error)
        XCTAssertFalse(FileManager.default.fileExists(atPath: keyFile), "logout forgets the key")

        // All of the above ran with the server's tasks on NIO's event loops, and SIGTERM still
        // ends it cleanly.
        let served = try XCTUnwrap(server)
        served.process.terminate()
        let ended = served.finish()
        server = nil
        XCTAssertEqual(ended.status, 0, ended.error)
        let log = ended.output + ended.error
        XCTAssertTrue(log.contains("\"tasks_on\":\"nio-event-loops\""), log)
    }

    /// The code in the `number`-th mail to `address`.
    func code(for address: String, number: Int = 1) async throws -> String {
        try await Eventually.value("code mail \(number) to \(address)") {
            let codes = try sink.messages().filter { $0.rcpt_tos == [address] }.compactMap { ($0.text ?? "").firstMatch(of: /code is (\d{6})/) }
            return codes.count >= number ? String(codes[number - 1].1) : nil
        }
    }

    static func waitUntilReady(_ issuer: String) async throws {
        try await Eventually.wait("modgud serve ready at \(issuer)", every: .milliseconds(100)) {
            let answer = try? await URLSession.shared.data(from: URL(string: issuer + "/health/ready")!)
            return (answer?.1 as? HTTPURLResponse)?.statusCode == 200
        }
    }

    static func userinfoStatus(_ issuer: String, _ token: String) async throws -> Int {
        var request = URLRequest(url: URL(string: issuer + "/connect/userinfo")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
