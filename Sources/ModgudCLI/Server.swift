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
    static func run(core: ModgudCore, host: String, port: Int, issuerScheme: String, adminToken: String?) async throws {
        var logger = Logger(label: "modgud")
        logger.logLevel = .info
        let daemon = ProjectionDaemonService(daemon: ProjectionDaemon(pool: core.pool, projections: ProjectionCatalog.asynchronous))
        let app = buildApplication(
            core: core, configuration: HTTPConfiguration(issuerScheme: issuerScheme, adminToken: adminToken),
            server: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "modgud"), logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: daemon), .init(service: app)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
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
