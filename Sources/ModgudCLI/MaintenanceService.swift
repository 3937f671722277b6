import Foundation
import Logging
import ModgudService
import ServiceLifecycle

/// Periodic work of one instance as a lifecycle service. Every `sampleInterval`: the state
/// gauges of `/metrics`. Every `pruneInterval`: `Housekeeping.prune`. A database error is
/// logged and the loop carries on.
struct MaintenanceService: Service {
    let sampler: MetricsSampler
    let housekeeping: Housekeeping
    let logger: Logger
    var sampleInterval: Duration = .seconds(15)
    var pruneInterval: Duration = .seconds(600)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            var nextPrune = clock.now
            while !Task.isCancelled {
                do {
                    try await sampler.sample()
                } catch {
                    logger.warning("metrics sampling failed", metadata: ["error": "\(error)"])
                }
                if clock.now >= nextPrune {
                    nextPrune = clock.now + pruneInterval
                    await housekeeping.prune(logger: logger)
                }
                try? await Task.sleep(for: sampleInterval)
            }
        }
    }
}
