import EventSourcing
import EventStorePostgres
import Foundation
import Logging
import Metrics
import ModgudDomain
import PQ

/// Push delivery (RFC 8935) from every instance: leases one stream at a time (so a stream's
/// SETs go out one after another, in log order), POSTs each due SET, deletes it once the
/// receiver accepts. A failure is retried with exponential backoff and holds the stream's
/// later SETs back (order); after `maxAttempts`, or at once when the receiver answers 400, the
/// SET is dead: kept for the operator (`modgud ssf dead`, `modgud_ssf_outbox{status="dead"}`)
/// and the stream moves on. An instance killed mid-delivery leaves a lease that expires; the
/// SETs it held are sent again with the same `jti`.
public final class SignalPusher: Sendable {
    public struct Settings: Sendable {
        public var maxAttempts: Int
        public var initialBackoff: TimeInterval
        public var maxBackoff: TimeInterval
        /// How long a leased stream stays this instance's without renewal.
        public var lease: TimeInterval

        public init(maxAttempts: Int = 20, initialBackoff: TimeInterval = 1, maxBackoff: TimeInterval = 300, lease: TimeInterval = 30) {
            self.maxAttempts = max(1, maxAttempts)
            self.initialBackoff = initialBackoff
            self.maxBackoff = maxBackoff
            self.lease = lease
        }

        /// The delay after the `attempt`-th failure (1-based).
        public func backoff(after attempt: Int) -> TimeInterval {
            min(maxBackoff, initialBackoff * pow(2, Double(max(0, attempt - 1))))
        }
    }

    let pool: PQPool
    let issuer: SignalSETIssuer
    let transport: any SignalPushTransport
    let settings: Settings
    let wakeups: SignalWakeups
    let sealer: KeySealer?
    private let instance = UUID().uuidString
    private let logger = Logger(label: "modgud.ssf")

    init(pool: PQPool, issuer: SignalSETIssuer, transport: any SignalPushTransport, settings: Settings, wakeups: SignalWakeups, sealer: KeySealer?) {
        self.pool = pool
        self.issuer = issuer
        self.transport = transport
        self.settings = settings
        self.wakeups = wakeups
        self.sealer = sealer
    }

    /// Delivers until cancelled; woken by `wakeups` and at least every second. A failure (the
    /// database away, a realm without a signing key) is logged and retried with the projection
    /// runner's backoff (250 ms doubling to 5 s); it never ends the loop.
    public func run() async {
        var backoff = RetryBackoff()
        while !Task.isCancelled {
            let generation = wakeups.generation
            do {
                while try await deliverOneStream(), !Task.isCancelled {}
                backoff.reset()
            } catch {
                let delay = backoff.nextDelay()
                logger.warning(
                    "shared signals: push delivery failed (the database, or signing); retrying",
                    metadata: ["error": "\(error)", "retry_in_ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)"])
                try? await Task.sleep(for: delay)
                continue
            }
            await wakeups.wait(since: generation, upTo: .seconds(1))
        }
    }

    /// Leases one stream with due SETs and delivers them in order; false when none was due.
    @discardableResult
    public func deliverOneStream() async throws -> Bool {
        guard let row = try await pool.query(SignalStreamsTable.leasePushStream(instance: instance, lease: settings.lease)).first else { return false }
        let stream = try SignalStreamRow(row: row)
        do {
            try await deliver(stream)
        } catch {
            _ = try? await pool.query(SignalStreamsTable.release(streamID: stream.streamID, instance: instance))
            throw error
        }
        _ = try await pool.query(SignalStreamsTable.release(streamID: stream.streamID, instance: instance))
        return true
    }

    /// The leased stream's due SETs, in order, until one fails.
    private func deliver(_ stream: SignalStreamRow) async throws {
        let authorization = try stream.sealedAuthorization.map { try SignalSecrets.openAuthorization($0, sealer: sealer, realm: stream.realm, streamID: stream.streamID) }
        for item in try await pool.query(SignalOutboxTable.pending(streamID: stream.streamID, enabled: stream.status == SignalStreamStatus.enabled.rawValue, limit: 100)).rows.map(SignalOutboxRow.init(row:)) {
            guard item.due, !Task.isCancelled else { return }
            guard let token = try await issuer.token(for: item, stream: stream) else {
                _ = try await pool.query(SignalOutboxTable.delivered(streamID: stream.streamID, seq: item.seq))
                continue
            }
            let started = ContinuousClock.now
            let outcome = await transport.push(token, to: stream.endpointURL ?? "", authorization: authorization)
            Timer(label: "modgud_ssf_push_duration_seconds").record(ContinuousClock.now - started)
            guard try await record(outcome, item: item, stream: stream) else { return }
        }
    }

    /// Records one attempt; true when the stream may go on to its next SET.
    private func record(_ outcome: SignalPushOutcome, item: SignalOutboxRow, stream: SignalStreamRow) async throws -> Bool {
        switch outcome {
        case .accepted:
            _ = try await pool.query(SignalOutboxTable.delivered(streamID: stream.streamID, seq: item.seq))
            Counter(label: "modgud_ssf_sets_delivered_total", dimensions: [("method", "push")]).increment()
            Timer(label: "modgud_ssf_delivery_lag_seconds").recordSeconds(max(0, Date().timeIntervalSince(item.occurredAt)))
            return true
        case .rejected(let reason), .failed(let reason):
            let attempt = item.attempts + 1
            let dead = attempt >= settings.maxAttempts || { if case .rejected = outcome { true } else { false } }()
            _ = try await pool.query(
                SignalOutboxTable.failed(streamID: stream.streamID, seq: item.seq, error: reason, retryAfter: settings.backoff(after: attempt), dead: dead))
            Counter(label: "modgud_ssf_push_failures_total", dimensions: [("final", dead ? "true" : "false")]).increment()
            logger.warning(
                dead ? "shared signals: SET dead-lettered" : "shared signals: push failed; will retry",
                metadata: ["stream_id": "\(stream.streamID)", "jti": "\(item.jti)", "attempt": "\(attempt)", "error": "\(reason)"])
            return dead
        }
    }
}

