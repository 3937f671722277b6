import Foundation
import MailTestSupport
import NIOCore
import NIOPosix
import XCTest

@testable import SMTP

/// The SMTP client against a real server (Python aiosmtpd in a child process).
final class SMTPClientTests: XCTestCase {
    private let message = MailMessage(
        to: "ada@example.com", subject: "Sign in to Zürich Bank",
        text: "Your code is 123456.\n.a line that starts with a dot\nBye", html: "<p>Your code is <b>123456</b>.</p>")

    func testStartTLSWithAuthPlainDeliversBothPartsIntact() async throws {
        let sink = try SMTPSink(startTLS: true, credentials: "mailer:s3cret")
        defer { sink.stop() }
        let client = try SMTPClient(
            configuration: SMTPConfiguration(
                host: "127.0.0.1", port: sink.port, security: .startTLS, username: "mailer", password: "s3cret",
                from: "no-reply@modgud.test", timeoutSeconds: 10, trustRootsFile: sink.certificateFile, tlsServerName: "localhost"))
        try await client.send(message)
        let received = try await sink.waitForMessages(1)
        XCTAssertEqual(received.count, 1)
        let mail = try XCTUnwrap(received.first)
        XCTAssertTrue(mail.tls, "the message must travel after STARTTLS")
        XCTAssertEqual(mail.authenticated_as, "mailer")
        XCTAssertEqual(mail.mail_from, "no-reply@modgud.test")
        XCTAssertEqual(mail.rcpt_tos, ["ada@example.com"])
        XCTAssertEqual(mail.subject, "Sign in to Zürich Bank")
        XCTAssertEqual(mail.content_type, "multipart/alternative")
        XCTAssertEqual(mail.text, message.text)
        XCTAssertEqual(mail.html, message.html)
    }

    func testWrongPasswordIsAPermanentFailure() async throws {
        let sink = try SMTPSink(startTLS: true, credentials: "mailer:s3cret")
        defer { sink.stop() }
        let client = try SMTPClient(
            configuration: SMTPConfiguration(
                host: "127.0.0.1", port: sink.port, username: "mailer", password: "wrong", from: "no-reply@modgud.test",
                timeoutSeconds: 10, trustRootsFile: sink.certificateFile, tlsServerName: "localhost"))
        do {
            try await client.send(message)
            XCTFail("a wrong password must not deliver")
        } catch let error as SMTPError {
            guard case .unexpectedReply(_, let code, _) = error else { return XCTFail("unexpected \(error)") }
            XCTAssertEqual(code, 535)
            XCTAssertTrue(error.isPermanent)
        }
        XCTAssertEqual(try sink.messages().count, 0)
    }

    func testStartTLSRequiredButNotOfferedIsRefusedBeforeAnyMailCommand() async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let client = try SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, from: "a@modgud.test"))
        do {
            try await client.send(message)
            XCTFail("must not send in the clear when STARTTLS is configured")
        } catch let error as SMTPError {
            XCTAssertEqual(error, .insecure("the SMTP server does not offer STARTTLS"))
        }
        XCTAssertEqual(try sink.messages().count, 0)
    }

    func testPlainRelayWithoutTLSDelivers() async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let client = try SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .none, from: "a@modgud.test"))
        try await client.send(message)
        let mail = try await sink.waitForMessages(1)[0]
        XCTAssertFalse(mail.tls)
        XCTAssertNil(mail.authenticated_as)
    }

    func testCredentialsAreNeverSentWithoutTLS() async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let client = try SMTPClient(
            configuration: SMTPConfiguration(
                host: "127.0.0.1", port: sink.port, security: .none, username: "u", password: "p", from: "a@modgud.test"))
        do {
            try await client.send(message)
            XCTFail("credentials over a clear connection must be refused")
        } catch let error as SMTPError {
            XCTAssertEqual(error, .insecure("credentials are never sent without TLS"))
        }
    }

    func testServerDownIsATemporaryFailure() async throws {
        let port = try SMTPSink.freePort()
        let client = try SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: port, security: .none, from: "a@modgud.test"))
        do {
            try await client.send(message)
            XCTFail("nobody listens there")
        } catch {
            XCTAssertFalse((error as? SMTPError)?.isPermanent ?? false, "a refused connection is worth a retry: \(error)")
        }
    }

    func testSilentServerTimesOut() async throws {
        // A server that accepts and never greets.
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try XCTUnwrap(server.localAddress?.port)
        let client = try SMTPClient(
            configuration: SMTPConfiguration(host: "127.0.0.1", port: port, security: .none, from: "a@modgud.test", timeoutSeconds: 0.5))
        // No bound on the time taken: a busy machine may take longer to fire the timer, and
        // `.timeout` can only come from the timer (the server never answers, never closes).
        do {
            try await client.send(message)
            XCTFail("a silent server must time out")
        } catch let error as SMTPError {
            XCTAssertEqual(error, .timeout)
        }
    }

    func testAddressesWithLineBreaksAreRefused() async throws {
        let client = try SMTPClient(configuration: SMTPConfiguration(host: "127.0.0.1", port: 1, security: .none, from: "a@modgud.test"))
        var evil = message
        evil.to = "victim@example.com>\r\nRCPT TO:<other@example.com"
        do {
            try await client.send(evil)
            XCTFail("must refuse")
        } catch let error as SMTPError {
            XCTAssertTrue(error.isPermanent)
        }
    }

    func testRenderingStripsHeaderInjectionAndEncodesNonASCIISubjects() {
        var mail = message
        mail.subject = "Hi\r\nBcc: everyone@example.com"
        let rendered = mail.rendered(from: "a@modgud.test", date: Date(timeIntervalSince1970: 0), messageID: "x@y", boundary: "b")
        XCTAssertTrue(rendered.contains("Subject: HiBcc: everyone@example.com\r\n"))
        XCTAssertFalse(rendered.contains("\r\nBcc:"))
        XCTAssertTrue(rendered.contains("Date: Thu, 1 Jan 1970 00:00:00 +0000\r\n"))
        XCTAssertEqual(MailMessage.encodedWord("Zürich"), "=?UTF-8?B?WsO8cmljaA==?=")
        XCTAssertEqual(SMTPSession.dotStuffed(".x\r\ny\r\n..z"), "..x\r\ny\r\n...z")
    }
}
