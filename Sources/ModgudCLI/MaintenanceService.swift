import EventSourcing
import Foundation
import EventStorePostgres
import Logging
import ModgudService
import ServiceLifecycle

/// Periodic housekeeping of one instance. Every `sampleInterval`: the state gauges of
/// `/metrics`. Every `pruneInterval`: drained rate-limit buckets (a bucket whose time has
/// passed holds nothing; deleting it changes no decision) and one-shot streams past their
/// retention, and the day keys of client IPs past theirs. Every instance runs it; each delete is idempotent and skips rows another
/// instance holds. A database error is logged and the loop carries on.
struct MaintenanceService: Service {
    let core: ModgudCore
    let sampler: MetricsSampler
    let retention: LogRetention
    /// How long client IPs in event metadata stay readable (their day keys are shredded after).
    let addressRetention: Duration
    let logger: Logger
    /// Whose idle timeout ends console sessions (their rows are removed here).
    var consoleSettings = OperatorConsole.Settings()
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
                    await prune()
                }
                try? await Task.sleep(for: sampleInterval)
            }
        }
    }

    private func prune() async {
        do {
            try await core.rateLimiter.prune()
            try await core.dpop?.prune(now: core.now())
            _ = try await OperatorConsole(core: core, settings: consoleSettings).pruneSessions()
        } catch {
            logger.warning("rate-limit, DPoP jti or console session pruning failed", metadata: ["error": "\(error)"])
        }
        do {
            let report = try await retention.prune()
            if report.streams > 0 {
                logger.info("pruned one-shot streams", metadata: ["streams": "\(report.streams)", "events": "\(report.events)"])
            }
        } catch {
            logger.warning("log retention failed", metadata: ["error": "\(error)"])
        }
        do {
            let cutoff = Date().addingTimeInterval(-Double(addressRetention.components.seconds))
            if let shredded = try await core.vault?.shredAddresses(before: cutoff), shredded > 0 {
                logger.info("client IPs past their retention made unreadable", metadata: ["days": "\(shredded)"])
            }
        } catch {
            logger.warning("client IP retention failed", metadata: ["error": "\(error)"])
        }
        do {
            if let shredded = try await core.vault?.shredAbandoned(before: Date().addingTimeInterval(-PersonalDataVault.abandonedAfter)), shredded > 0 {
                logger.info("keys of registrations never completed shredded", metadata: ["keys": "\(shredded)"])
            }
        } catch {
            logger.warning("abandoned registration cleanup failed", metadata: ["error": "\(error)"])
        }
    }
}
