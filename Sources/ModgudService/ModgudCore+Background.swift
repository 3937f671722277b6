import EventStorePostgres
import Foundation
import Logging
import PQ

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
            vault: vault, addressRetention: addressRetention, firstParty: firstParty, tokens: TokenTables(pool: pool), now: now)
    }

    /// Signs SETs at delivery (push and poll alike).
    var signalIssuer: SignalSETIssuer {
        SignalSETIssuer(keys: keys, users: userActors, vault: vault, clients: clientAuthenticator)
    }

    /// The Shared Signals Stream Management API and the poll endpoint (issue 30).
    public var signalStreams: SignalStreamService {
        SignalStreamService(
            pool: pool, streams: signalStreamActors, users: userActors, vault: vault, sealer: secrets?.sealer, issuer: signalIssuer,
            wakeups: signalWakeups, now: now)
    }

    /// The log follower that enqueues SETs; it rings this instance's wakeups after each batch.
    public func makeSignalTransmitter() -> SignalTransmitter {
        let wakeups = signalWakeups
        return SignalTransmitter(pool: pool, enqueued: { wakeups.ring() })
    }

    /// What rings this instance's SET wakeups whenever another instance enqueues (NOTIFY
    /// `modgud_ssf`), and at least every second, until cancelled.
    public func makeSignalRelay() -> @Sendable () async -> Void {
        let (configuration, wakeups) = (pool.configuration, signalWakeups)
        return {
            let listener = NotificationListener(configuration: configuration, channel: SignalTables.channel)
            while !Task.isCancelled {
                await listener.wait(timeout: .seconds(1))
                wakeups.ring()
            }
            await listener.close()
        }
    }

    /// This instance's push deliverer.
    public func makeSignalPusher(
        transport: any SignalPushTransport = URLSessionSignalPushTransport(), settings: SignalPusher.Settings = SignalPusher.Settings()
    ) -> SignalPusher {
        SignalPusher(pool: pool, issuer: signalIssuer, transport: transport, settings: settings, wakeups: signalWakeups, sealer: secrets?.sealer)
    }
}
