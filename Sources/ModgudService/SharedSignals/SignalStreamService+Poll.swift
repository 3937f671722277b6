import Foundation
import Metrics
import ModgudDomain

/// What one poll returns (RFC 8936 section 2.3).
public struct SignalPollResult: Sendable {
    /// `jti` and SET, in log order.
    public var sets: [(jti: String, token: String)]
    public var moreAvailable: Bool
}

extension SignalStreamService {
    /// One poll (RFC 8936 section 2.4): acknowledgements and errors first, then up to
    /// `maxEvents` unacknowledged SETs in log order. A SET stays until it is acknowledged, so
    /// one lost in transit comes again with the same `jti`. Without `returnImmediately`, an
    /// empty poll waits up to `wait` for a SET (long polling, section 2.4.3), or until the
    /// instance drains (`draining`), so that a shutdown is not held by idle polls.
    public func poll(
        realm: String, clientID: String, acknowledgements: [String], errors: [String: String], maxEvents: Int?, returnImmediately: Bool,
        wait: Duration, draining: @Sendable () -> Bool = { false }
    ) async throws -> SignalPollResult {
        return try await ServiceRefusal.translating {
            guard let state = try await read(realm: realm, clientID: clientID), let streamID = state.streamID else {
                throw DomainError.notFound("SignalStream.NotFound", "No such stream.")
            }
            guard state.configuration?.method == .poll else { throw DomainError("SignalStream.NotPolled", "This stream pushes its SETs.") }
            if !acknowledgements.isEmpty {
                let removed = try await pool.query(SignalOutboxTable.acknowledge(streamID: streamID, jtis: acknowledgements)).affectedRows
                Counter(label: "modgud_ssf_sets_delivered_total", dimensions: [("method", "poll")]).increment(by: removed)
            }
            for (jti, error) in errors { _ = try await pool.query(SignalOutboxTable.rejected(streamID: streamID, jti: jti, error: error)) }
            let limit = min(max(maxEvents ?? 100, 0), 1000)
            guard limit > 0 else { return SignalPollResult(sets: [], moreAvailable: false) }
            let deadline = ContinuousClock.now + (returnImmediately ? .zero : wait)
            while true {
                let generation = wakeups.generation
                let result = try await pending(streamID: streamID, realm: realm, clientID: clientID, limit: limit)
                if !result.sets.isEmpty || ContinuousClock.now >= deadline || Task.isCancelled || draining() { return result }
                await wakeups.wait(since: generation, upTo: min(deadline - ContinuousClock.now, .seconds(1)))
            }
        }
    }

    /// Up to `limit` signed SETs of an enabled stream (a paused one holds them, a disabled one
    /// dropped them: only their stream-updated SETs come).
    private func pending(streamID: String, realm: String, clientID: String, limit: Int) async throws -> SignalPollResult {
        guard let row = try await pool.query(SignalStreamsTable.stream(realm: realm, clientID: clientID)).first else {
            return SignalPollResult(sets: [], moreAvailable: false)  // created, not applied yet
        }
        let stream = try SignalStreamRow(row: row)
        guard stream.streamID == streamID else { return SignalPollResult(sets: [], moreAvailable: false) }
        let enabled = stream.status == SignalStreamStatus.enabled.rawValue
        let rows = try await pool.query(SignalOutboxTable.pending(streamID: streamID, enabled: enabled, limit: limit + 1)).rows.map(SignalOutboxRow.init(row:))
        var sets: [(jti: String, token: String)] = []
        for item in rows.prefix(limit) {
            if let token = try await issuer.token(for: item, stream: stream) {
                sets.append((item.jti, token))
            } else {
                _ = try await pool.query(SignalOutboxTable.delivered(streamID: streamID, seq: item.seq))
            }
        }
        return SignalPollResult(sets: sets, moreAvailable: rows.count > limit)
    }
}
