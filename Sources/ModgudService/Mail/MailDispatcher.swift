import Foundation
import Logging
import Metrics
import SMTP

/// Delivers the outbox: claims due rows, sends each, deletes it once accepted; on failure
/// retries with exponential backoff and, after `maxAttempts` (or a permanent 5xx), marks the
/// row dead for the operator. Runs in every instance; `FOR UPDATE SKIP LOCKED` plus a lease
/// keep two instances from sending the same row at once.
public final class MailDispatcher: Sendable {
    /// Tunables (docs/operations/commands.md, "Mail").
    public struct Settings: Sendable {
        /// Attempts before a row is dead.
        public var maxAttempts: Int
        /// First retry delay; doubled per attempt up to `maxBackoff`.
        public var initialBackoff: TimeInterval
        public var maxBackoff: TimeInterval
        /// How often other instances' rows are looked for (this instance's are sent at once).
        public var pollInterval: TimeInterval
        /// How long a claimed row stays hidden from other dispatchers.
        public var lease: TimeInterval

        public init(maxAttempts: Int = 8, initialBackoff: TimeInterval = 5, maxBackoff: TimeInterval = 600, pollInterval: TimeInterval = 2,
            lease: TimeInterval = 120)
        {
            self.maxAttempts = maxAttempts
            self.initialBackoff = initialBackoff
            self.maxBackoff = maxBackoff
            self.pollInterval = pollInterval
            self.lease = lease
        }

        /// The delay after the `attempt`-th failure (1-based).
        public func backoff(after attempt: Int) -> TimeInterval {
            min(maxBackoff, initialBackoff * pow(2, Double(max(0, attempt - 1))))
        }
    }

    public let outbox: MailOutbox
    let transport: any MailTransport
    let settings: Settings
    let logger: Logger
    private let doorbell: Doorbell

    public convenience init(
        outbox: MailOutbox, transport: any MailTransport, settings: Settings = Settings(), logger: Logger = Logger(label: "modgud.mail")
    ) {
        self.init(outbox: outbox, transport: transport, settings: settings, logger: logger, doorbell: Doorbell())
    }

    init(outbox: MailOutbox, transport: any MailTransport, settings: Settings, logger: Logger, doorbell: Doorbell) {
        self.doorbell = doorbell
        self.outbox = outbox
        self.transport = transport
        self.settings = settings
        self.logger = logger
    }

    /// Something was enqueued here: look now instead of at the next poll.
    public func poke() {
        doorbell.ring()
    }

    /// Delivers until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                while try await deliverDue() > 0, !Task.isCancelled {}
            } catch {
                logger.error("mail outbox unavailable", metadata: ["error": "\(error)"])
            }
            await doorbell.wait(upTo: settings.pollInterval)  // a poke or the poll interval
        }
    }

    /// Sends every row due now (one claim of up to 20); returns how many were claimed.
    @discardableResult
    public func deliverDue() async throws -> Int {
        let items = try await outbox.claim(limit: 20, lease: settings.lease)
        for item in items {
            guard let message = item.message else {
                // The person was erased while the mail waited: their address is gone, and so is the mail.
                try await outbox.delivered(item.id)
                Counter(label: "modgud_mail_dropped_total", dimensions: [("reason", "erased")]).increment()
                logger.notice("mail for an erased person dropped", metadata: ["outbox_id": "\(item.id)", "realm": "\(item.realm)"])
                continue
            }
            do {
                try await transport.send(message)
                try await outbox.delivered(item.id)
                Counter(label: "modgud_mail_delivered_total").increment()
                logger.info("mail delivered", metadata: ["outbox_id": "\(item.id)", "realm": "\(item.realm)"])
            } catch {
                // Shutting down mid-send is not the message's fault: the lease brings it back.
                if Task.isCancelled { return items.count }
                let attempt = item.attempts + 1
                let permanent = (error as? SMTPError)?.isPermanent ?? false
                let dead = permanent || attempt >= settings.maxAttempts
                // A server's reply often quotes the recipient: neither the row nor the log keeps it.
                let reason = "\(error)".replacingOccurrences(of: message.to, with: "[recipient]", options: .caseInsensitive)
                try await outbox.failed(item.id, error: reason, retryAfter: settings.backoff(after: attempt), dead: dead)
                Counter(label: "modgud_mail_delivery_failures_total", dimensions: [("final", dead ? "true" : "false")]).increment()
                logger.warning(
                    dead ? "mail dead-lettered" : "mail delivery failed; will retry",
                    metadata: ["outbox_id": "\(item.id)", "attempt": "\(attempt)", "error": "\(reason)"])
            }
        }
        return items.count
    }
}
