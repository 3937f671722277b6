import AsyncTestSupport
import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MailTestSupport
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import SMTP
import Synchronization
import XCTest

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date = Date()) { value = Mutex(start) }
    func now() -> Date { value.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { value.withLock { $0 += seconds } }
}

/// Collects every log line (to search them for secrets).
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }

    func logger(_ label: String) -> Logger {
        var logger = Logger(label: label) { _ in CapturingHandler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    struct CapturingHandler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.append("\(event.level) \(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })")
        }
    }
}

/// One realm on a fresh database, a real SMTP server (aiosmtpd, STARTTLS + AUTH) and the
/// outbox dispatcher delivering to it: everything issue 5's acceptance runs through.
final class EmailSignInHarness: @unchecked Sendable {
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
    static let json: HTTPFields = [.contentType: "application/json", .init("X-Request-Id")!: "fixed-request-id"]
    static let masterKey = Array(repeating: UInt8(9), count: 32)
    static let adminToken = String(repeating: "k", count: 40)

    let database: any DisposableDatabase
    let clock: TestClock
    let core: ModgudCore
    let sink: SMTPSink?
    let logs = LogCapture()
    let confidentialSecret: String
    var dispatcher: MailDispatcher!
    /// How many mails of each kind to each address the test has waited for (see `mail(to:)`).
    private let waited = Mutex<[MailKey: Int]>([:])
    private var dispatcherTask: Task<Void, Never>?
    let configuration: HTTPConfiguration

    /// - Parameters:
    ///   - smtpPort: deliver to this port instead of a sink started here (nil sink then).
    ///   - jitter: the anti-enumeration delay (short by default; the timing test uses the real one).
    ///   - database: run on this database (default: a fresh one on the shared test cluster).
    init(
        settings: (inout RealmSettings) -> Void = { _ in }, smtpPort: Int? = nil, jitter: ResponseJitter = ResponseJitter(milliseconds: 1...3),
        maxConnections: Int = 30, issuerScheme: String = "https", database: (any DisposableDatabase)? = nil, signalLongPoll: Duration = .seconds(20),
        signingKey: Bool = true, attestationRoots: AttestationRoots = .published
    ) async throws {
        if let database {
            self.database = database
        } else {
            self.database = try await TestDatabase.create(maxConnections: maxConnections)
        }
        let clock = TestClock()
        self.clock = clock
        core = try ModgudCore(pool: self.database.pool, masterKey: Self.masterKey, now: { clock.now() }, attestationRoots: attestationRoots)
        var realm = RealmSettings(
            hosts: ["localhost"], displayName: "Acme <Sign-in>", publicBaseURL: "https://login.acme.test",
            nativeGrants: NativeGrantSettings(enabled: true), registrationPosture: .jitOnOtp)
        settings(&realm)
        let admin = core.administration
        // The clients get their native grants while the flag is on (issue 65, item 7); a test
        // that turns it off gets its settings afterwards, the grants then inert.
        var creation = realm
        creation.nativeGrants.enabled = true
        _ = try await admin.realms.create("dev", settings: creation, metadata: .init())
        if signingKey { try await core.keys.rotate(realm: "dev", now: Date(), metadata: .init()) }
        let scopes: Set<String> = ["openid", "email", "profile", "offline_access", "api"]
        _ = try await admin.clients.create(
            realm: "dev", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .magic, .refreshToken], allowedScopes: scopes),
            metadata: .init())
        let (_, secret) = try await admin.clients.create(
            realm: "dev", id: "conf", settings: ClientSettings(type: .confidential, grants: [.otp, .magic, .refreshToken], allowedScopes: scopes),
            metadata: .init())
        confidentialSecret = secret!
        _ = try await admin.clients.create(
            realm: "dev", id: "plain", settings: ClientSettings(type: .public, grants: [.passkey, .refreshToken], allowedScopes: scopes), metadata: .init())
        if creation != realm { _ = try await admin.realms.update("dev", metadata: .init()) { $0 = realm } }
        var configuration = HTTPConfiguration(issuerScheme: issuerScheme, adminToken: Self.adminToken, jitter: jitter)
        configuration.signalLongPoll = signalLongPoll
        self.configuration = configuration
        let port: Int
        if let smtpPort {
            sink = nil
            port = smtpPort
        } else {
            let sink = try SMTPSink(startTLS: true, credentials: "modgud:mail-pass")
            self.sink = sink
            port = sink.port
        }
        let transport = try SMTPMailTransport(
            configuration: SMTPConfiguration(
                host: "127.0.0.1", port: port, security: smtpPort == nil ? .startTLS : .none, username: smtpPort == nil ? "modgud" : nil,
                password: smtpPort == nil ? "mail-pass" : nil, from: "no-reply@acme.test", timeoutSeconds: 5, trustRootsFile: sink?.certificateFile,
                tlsServerName: "localhost"))
        dispatcher = try core.makeMailDispatcher(
            transport: transport, settings: .init(maxAttempts: 50, initialBackoff: 0.1, maxBackoff: 0.3, pollInterval: 0.2, lease: 30))
        let dispatcher = self.dispatcher!
        dispatcherTask = Task { await dispatcher.run() }
    }

    func close() async {
        dispatcherTask?.cancel()
        _ = await dispatcherTask?.value
        sink?.stop()
        await database.dispose()
    }

    var app: some ApplicationProtocol {
        buildApplication(core: core, configuration: configuration, logger: logs.logger("modgud.http"))
    }

    // MARK: Requests

    struct Reply: @unchecked Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: String
        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]) ?? [:] }
    }

    static func call(_ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, _ body: String, headers: HTTPFields)
        async throws -> Reply
    {
        let response = try await client.execute(uri: path, method: method, headers: headers, body: ByteBuffer(string: body))
        return Reply(status: response.status, headers: response.headers, body: String(buffer: response.body))
    }

    static func jsonBody(_ members: [String: String]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: members, options: [.sortedKeys]), as: UTF8.self)
    }

    static func requestCode(_ client: some TestClientProtocol, _ email: String, path: String = "/api/account/native/otp/request", extra: [String: String] = [:])
        async throws -> Reply
    {
        try await call(client, .post, path, jsonBody(["Email": email].merging(extra) { $1 }), headers: json)
    }

    static func token(_ client: some TestClientProtocol, _ fields: [(String, String)], headers: HTTPFields = form) async throws -> Reply {
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }.joined(separator: "&")
        return try await call(client, .post, "/connect/token", body, headers: headers)
    }

    static func redeemCode(_ client: some TestClientProtocol, _ email: String, _ code: String, clientID: String = "app",
        scope: String = "openid email offline_access", extra: [(String, String)] = []) async throws -> Reply
    {
        try await token(
            client, [("grant_type", "urn:cocoar:otp"), ("client_id", clientID), ("username", email), ("otp_code", code), ("scope", scope)] + extra)
    }

    // MARK: Mail

    /// What a mail carries, to tell mails to one address apart: a retried delivery goes out
    /// after later mails, so mails to one address arrive in no set order.
    enum MailKind: Sendable, Hashable {
        /// A sign-in, registration or confirmation code ("… code is 123456").
        case code
        /// A magic link.
        case magicLink
        /// Any mail.
        case any

        func matches(_ mail: SMTPSink.Received) -> Bool {
            let text = mail.text ?? ""
            switch self {
            case .code: return text.firstMatch(of: /code is \d{6}/) != nil
            case .magicLink: return text.contains("/magic-login?")
            case .any: return true
            }
        }
    }

    /// Waits for the `count`-th mail of `kind` to `address` and returns it. Order is counted
    /// within a kind only, and holds only if the test asked for mail n of a kind after it had
    /// waited for mail n-1 of that kind (here, or by `allMailDelivered()`): a delivery that
    /// failed once is retried after a later mail went out, so mails sent without waiting
    /// arrive in no set order. A test that skips the wait fails here, on every run, instead of
    /// on the run where a retry swapped two mails.
    func mail(to address: String, number count: Int = 1, kind: MailKind = .any, file: StaticString = #filePath, line: UInt = #line)
        async throws -> SMTPSink.Received
    {
        let known = waited.withLock { $0[MailKey(address: address, kind: kind)] ?? 0 }
        XCTAssertLessThanOrEqual(
            count, known + 1, "mail \(count) (\(kind)) to \(address) asked for before mail \(count - 1) was waited for: mails arrive in no set order",
            file: file, line: line)
        let mail = try await Eventually.value("mail \(count) (\(kind)) to \(address)") {
            let mails = try mails(to: address).filter(kind.matches)
            return mails.count >= count ? mails[count - 1] : nil
        }
        waited.withLock { $0[MailKey(address: address, kind: kind), default: 0] = max($0[MailKey(address: address, kind: kind)] ?? 0, count) }
        return mail
    }

    private struct MailKey: Hashable {
        var address: String
        var kind: MailKind
    }

    func mails(to address: String) throws -> [SMTPSink.Received] {
        try XCTUnwrap(sink).messages().filter { $0.rcpt_tos == [address] }
    }

    /// The code in the `count`-th code mail to `address`, read from the received message.
    func code(for address: String, number count: Int = 1, file: StaticString = #filePath, line: UInt = #line) async throws -> String {
        let text = try await mail(to: address, number: count, kind: .code, file: file, line: line).text ?? ""
        let match = try XCTUnwrap(text.firstMatch(of: /code is (\d{6})/), "no code in: \(text)")
        return String(match.1)
    }

    /// userId and token of the magic link in the `count`-th link mail to `address`.
    func magicLink(for address: String, number count: Int = 1, file: StaticString = #filePath, line: UInt = #line) async throws
        -> (link: String, userID: String, token: String)
    {
        let text = try await mail(to: address, number: count, kind: .magicLink, file: file, line: line).text ?? ""
        let match = try XCTUnwrap(text.firstMatch(of: /(https:\/\/\S+\/magic-login\?userId=([0-9a-f-]+)&token=([A-Za-z0-9_-]+))/), text)
        return (String(match.1), String(match.2), String(match.3))
    }

    /// Waits until every queued mail was accepted by the SMTP server (a delivered row leaves
    /// the outbox, after the server's 250, and the sink has written the message before it
    /// answers). `deliverDue()` alone is not enough: the background dispatcher may hold a
    /// claimed row mid-send, which a count right after would miss.
    func allMailDelivered() async throws {
        try await dispatcher.deliverDue()
        try await Eventually.wait("the outbox emptied") { try await self.outboxCount() == 0 }
        guard let sink else { return }
        let received = try sink.messages()
        waited.withLock { waited in
            for mail in received {
                for address in mail.rcpt_tos {
                    for kind in [MailKind.code, .magicLink, .any] where kind.matches(mail) {
                        let key = MailKey(address: address, kind: kind)
                        waited[key] = max(waited[key] ?? 0, received.filter { $0.rcpt_tos.contains(address) && kind.matches($0) }.count)
                    }
                }
            }
        }
    }

    /// Stops this instance's dispatcher and waits until it has: no mail is sent after this.
    func stopDispatcher() async {
        dispatcherTask?.cancel()
        _ = await dispatcherTask?.value
        dispatcherTask = nil
    }

    // MARK: State

    func registerUser(_ email: String, confirmed: Bool = true) async throws -> UUID {
        let id = try await core.administration.users.create(realm: "dev", email: email, emailConfirmed: confirmed, metadata: .init()).id
        return id
    }

    func eventCount() async throws -> Int {
        try await core.pool.query("SELECT count(*) FROM events").first!.decode(Int.self, at: 0)
    }

    /// How many events of `type` the log holds.
    func eventCount(type: String) async throws -> Int {
        try await core.pool.query("SELECT count(*) FROM events WHERE type = \(type)").first!.decode(Int.self, at: 0)
    }

    func userCount(_ email: String) async throws -> Int {
        // By the blind index: the directory holds no address (issue 13).
        let index = core.vault!.blindIndex(EmailAddress(email)!.value, realm: "dev")
        return try await core.pool.query("SELECT count(*) FROM users WHERE email_key = \(index)").first!.decode(Int.self, at: 0)
    }

    func outboxCount() async throws -> Int {
        try await core.pool.query("SELECT count(*) FROM mail_outbox").first!.decode(Int.self, at: 0)
    }

    /// Every row of every table in the schema, as text (events, read models, outbox, limits).
    func databaseText() async throws -> String {
        let tables = try await core.pool.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        ).rows.map { try $0.decode(String.self, at: 0) }
        var text = ""
        for table in tables {
            for row in try await core.pool.query("SELECT t::text FROM \(identifier: table) t").rows { text += try row.decode(String.self, at: 0) + "\n" }
        }
        return text
    }
}

