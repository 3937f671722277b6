import Foundation
@testable import ModgudService
import PostgresTestSupport
import SMTP
import Synchronization
import XCTest

/// The outbox dispatcher on a real database with a transport that fails on purpose: retries
/// with backoff, dead letters after N attempts or a permanent error, and operator retry.
final class MailDispatcherTests: XCTestCase {
    var database: TestDatabase!

    override func tearDown() async throws {
        await database?.drop()
    }

    /// Fails with the given errors in turn, then delivers; records what it delivered.
    final class ScriptedTransport: MailTransport {
        let script: Mutex<[any Error]>
        let delivered = Mutex<[MailMessage]>([])
        init(_ failures: [any Error]) { script = Mutex(failures) }
        func send(_ message: MailMessage) async throws {
            if let failure = script.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
            delivered.withLock { $0.append(message) }
        }
    }

    /// Queues a mail for a person (`user:<subject>`), sealed under their data key.
    func enqueue(_ core: ModgudCore, to address: String, subject: String = "user:00000000-0000-0000-0000-0000000000a1") async throws {
        let outbox = MailOutbox(pool: core.pool, secrets: try XCTUnwrap(core.secrets), vault: core.vault)
        let message = MailMessage(to: address, subject: "s", text: "t 123456", html: "h")
        _ = try await core.pool.query(try await outbox.enqueue(message, realm: "r", sealing: .subject(subject)))
    }

    /// Issue 22: the row holds no address (the message is sealed under the person's key), and a
    /// mail whose person was erased while it waited is dropped, never sent.
    func testARowHoldsNoAddressAndMailForAnErasedPersonIsDropped() async throws {
        database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 1, count: 32))
        let transport = ScriptedTransport([])
        let dispatcher = try core.makeMailDispatcher(transport: transport, settings: .init(maxAttempts: 5, initialBackoff: 0, maxBackoff: 0))
        try await enqueue(core, to: "kept@example.com", subject: "user:00000000-0000-0000-0000-0000000000b1")
        try await enqueue(core, to: "erased@example.com", subject: "user:00000000-0000-0000-0000-0000000000b2")
        let row = try await core.pool.query("SELECT string_agg(t::text, ' ') FROM mail_outbox t").first?.decode(String.self, at: 0) ?? ""
        XCTAssertFalse(row.contains("@example.com"), row)
        XCTAssertTrue(row.contains("user:00000000-0000-0000-0000-0000000000b1"), "a row names whose mail it is")
        try await core.vault!.shred(subject: "user:00000000-0000-0000-0000-0000000000b2", realm: "r")
        try await dispatcher.deliverDue()
        XCTAssertEqual(transport.delivered.withLock { $0.map(\.to) }, ["kept@example.com"], "the erased person's mail is not sent")
        let counts = try await dispatcher.outbox.counts()
        XCTAssertEqual(counts.pending + counts.dead, 0, "and not kept either")
    }

    func testTemporaryFailuresAreRetriedThenTheRowIsDeleted() async throws {
        database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 1, count: 32))
        let transport = ScriptedTransport([SMTPError.timeout, SMTPError.unexpectedReply(command: "RCPT", code: 451, text: "later")])
        let dispatcher = try core.makeMailDispatcher(transport: transport, settings: .init(maxAttempts: 5, initialBackoff: 0, maxBackoff: 0))
        try await enqueue(core, to: "a@example.com")
        for _ in 0..<3 { try await dispatcher.deliverDue() }
        XCTAssertEqual(transport.delivered.withLock { $0.map(\.to) }, ["a@example.com"])
        XCTAssertEqual(transport.delivered.withLock { $0.first?.text }, "t 123456", "the sealed message opens intact")
        let counts = try await dispatcher.outbox.counts()
        XCTAssertEqual(counts.pending + counts.dead, 0, "delivered rows are deleted")
    }

    func testAfterMaxAttemptsOrAPermanentErrorTheRowIsDeadUntilRetried() async throws {
        database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 1, count: 32))
        let transport = ScriptedTransport(
            Array(repeating: SMTPError.connectionClosed, count: 3) + [SMTPError.unexpectedReply(command: "RCPT", code: 550, text: "no such user")])
        let dispatcher = try core.makeMailDispatcher(transport: transport, settings: .init(maxAttempts: 3, initialBackoff: 0, maxBackoff: 0))
        try await enqueue(core, to: "a@example.com")
        for _ in 0..<5 { try await dispatcher.deliverDue() }
        var counts = try await dispatcher.outbox.counts()
        XCTAssertEqual(counts.dead, 1, "3 attempts, then dead")
        let entries = try await dispatcher.outbox.entries()
        let entry = try XCTUnwrap(entries.first)
        XCTAssertEqual(entry.attempts, 3)
        XCTAssertEqual(entry.lastError, "the SMTP server closed the connection")
        var retried = try await dispatcher.outbox.retryDead()
        XCTAssertEqual(retried, 1)
        try await dispatcher.deliverDue()  // the 550: permanent, dead at once
        counts = try await dispatcher.outbox.counts()
        XCTAssertEqual(counts.dead, 1)
        let attempts = try await dispatcher.outbox.entries().first?.attempts
        XCTAssertEqual(attempts, 1)
        retried = try await dispatcher.outbox.retryDead()
        XCTAssertEqual(retried, 1)
        try await dispatcher.deliverDue()
        XCTAssertEqual(transport.delivered.withLock { $0.count }, 1)
    }

    func testBackoffDoublesUpToTheCap() {
        let settings = MailDispatcher.Settings(initialBackoff: 5, maxBackoff: 600)
        XCTAssertEqual((1...9).map { settings.backoff(after: $0) }, [5, 10, 20, 40, 80, 160, 320, 600, 600])
    }
}
