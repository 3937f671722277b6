import EventStorePostgres
import Foundation
import Hummingbird
import Logging
import ModgudHTTP
import ModgudService
import PQ
import ServiceLifecycle

/// Runs the HTTP server and the projection daemon until SIGTERM/SIGINT, then drains.
enum Server {
    static func run(
        core: ModgudCore, host: String, port: Int, issuerScheme: String, configuration: ModgudConfiguration, mail: any MailTransport
    ) async throws {
        var logger = Logger(label: "modgud")
        logger.logLevel = .info
        let daemon = ProjectionDaemonService(daemon: ProjectionDaemon(pool: core.pool, projections: ProjectionCatalog.asynchronous))
        let app = buildApplication(
            core: core,
            configuration: HTTPConfiguration(
                issuerScheme: issuerScheme, adminToken: configuration.adminToken, trustedProxies: configuration.trustedProxies),
            server: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "modgud"), logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: daemon), .init(service: MailDispatcherService(dispatcher: try core.makeMailDispatcher(
                        transport: mail, settings: configuration.mailDispatcher))),
                    .init(service: MaintenanceService(core: core, logger: logger)),
                    .init(service: app),
                ], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// The projection daemon as a lifecycle service.
struct ProjectionDaemonService: Service {
    let daemon: ProjectionDaemon

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await daemon.run()
        }
    }
}

/// The outbox dispatcher as a lifecycle service.
struct MailDispatcherService: Service {
    let dispatcher: MailDispatcher

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await dispatcher.run()
        }
    }
}

/// Periodic housekeeping: drained rate-limit buckets are deleted every 10 minutes (a bucket
/// whose time has passed holds nothing; deleting it changes no decision).
struct MaintenanceService: Service {
    let core: ModgudCore
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await core.rateLimiter.prune()
                } catch {
                    logger.warning("rate-limit pruning failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(600))
            }
        }
    }
}
