import Foundation
import SMTP

/// Where the dispatcher hands a message.
public protocol MailTransport: Sendable {
    /// Delivers or throws; an `SMTPError` with `isPermanent` is not retried.
    func send(_ message: MailMessage) async throws
}

/// Delivery over SMTP (production and integration tests).
public struct SMTPMailTransport: MailTransport {
    let client: SMTPClient

    public init(configuration: SMTPConfiguration) throws {
        client = try SMTPClient(configuration: configuration)
    }

    public func send(_ message: MailMessage) async throws {
        try await client.send(message)
    }
}

/// Development: each mail printed whole (the code or link is right there in the terminal).
/// Never for production: it writes secrets to standard output.
public struct ConsoleMailTransport: MailTransport {
    let write: @Sendable (String) -> Void

    /// - Parameter write: where the text goes (default: standard output, unbuffered, so a mail
    ///   shows at once even when output goes to a file or a pipe).
    public init(write: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }) {
        self.write = write
    }

    public func send(_ message: MailMessage) async throws {
        write(
            """
            ── mail to \(message.to) ──────────────────────────────
            Subject: \(message.subject)

            \(message.text)
            ─────────────────────────────────────────────────────────
            """)
    }
}
