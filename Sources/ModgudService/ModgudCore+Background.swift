import EventStorePostgres
import Foundation
import Logging

/// The background work of one instance, built from the composition at start-up and run by the
/// server's lifecycle (`modgud serve`).
extension ModgudCore {
    /// The projection daemon of the asynchronous read models.
    public func makeProjectionDaemon() -> ProjectionDaemon {
        ProjectionDaemon(pool: pool, projections: ProjectionCatalog.asynchronous)
    }

    /// The audit log's integrator (issue 28), signing with the realms' audit keys.
    public func makeAuditLogIntegrator(settings: AuditLogIntegrator.Settings) -> AuditLogIntegrator {
        AuditLogIntegrator(pool: pool, signer: auditKeys, settings: settings)
    }

    /// This instance's listener for other instances' settings changes.
    public func makeSettingsChangeListener(logger: Logger) -> SettingsChangeListener {
        let notifier = settingsNotifier
        return SettingsChangeListener(configuration: pool.configuration, invalidate: { notifier.invalidateLocally($0) }, logger: logger)
    }

    /// The sampler of `/metrics`' state gauges.
    public func makeMetricsSampler(outbox: MailOutbox?) -> MetricsSampler {
        MetricsSampler(pool: pool, outbox: outbox)
    }

    /// Periodic pruning and retention (`Housekeeping`).
    public func makeHousekeeping(retention: Duration, addressRetention: Duration, console: OperatorConsole.Settings) -> Housekeeping {
        Housekeeping(
            rateLimiter: rateLimiter, dpop: dpop, console: self.console(settings: console), retention: .oneShotStreams(pool: pool, maxAge: retention),
            vault: vault, addressRetention: addressRetention, firstParty: firstParty, now: now)
    }
}
