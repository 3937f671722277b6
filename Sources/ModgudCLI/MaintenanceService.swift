import Foundation
import Logging
import ModgudService
import ServiceLifecycle

/// Periodic work of one instance as a lifecycle service. Every `sampleInterval`: the state
/// gauges of `/metrics` and this instance's client attestation counts added to the table.
/// Every `pruneInterval`: `Housekeeping.prune`. A database error is logged and the loop
/// carries on. At shutdown the counts are flushed once more.
struct MaintenanceService: Service {
    /// Nil for every cell but the home cell (issue 71): `/metrics`' state gauges are one cell's.
    let sampler: MetricsSampler?
    let housekeeping: Housekeeping
    /// Nil without the master key (no attestation is checked).
    let tally: ClientAttestationTally?
    let logger: Logger
    var sampleInterval: Duration = .seconds(15)
    var pruneInterval: Duration = .seconds(600)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            var nextPrune = clock.now
            while !Task.isCancelled {
                do {
                    try await sampler?.sample()
                } catch {
                    logger.warning("metrics sampling failed", metadata: ["error": "\(error)"])
                }
                await flush()
                if clock.now >= nextPrune {
                    nextPrune = clock.now + pruneInterval
                    await housekeeping.prune(logger: logger)
                }
                try? await Task.sleep(for: sampleInterval)
            }
        }
        await flush()
    }

    private func flush() async {
        do {
            try await tally?.flush()
        } catch {
            logger.warning("client attestation counts not flushed", metadata: ["error": "\(error)"])
        }
    }
}
