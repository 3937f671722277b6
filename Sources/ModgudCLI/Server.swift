import EventStorePostgres
import Foundation
import Hummingbird
import Logging
import ModgudHTTP
import ModgudService
import PQ
import ServiceLifecycle

/// Runs the HTTP server and the background services until SIGTERM/SIGINT, then drains.
///
/// Shutdown order (a `ServiceGroup` stops services in reverse order, each after the one
/// behind it has finished): the drain turns `/health/ready` to 503 and waits `drain` so load
/// balancers move away; then the HTTP server stops accepting and finishes its in-flight
/// requests; then the console's rebuilds, the maintenance loop, the mail dispatcher and the
/// projection daemon stop.
/// None of the background services ends on a database error: each logs and retries.
enum Server {
    struct Settings {
        var host: String
        var port: Int
        var issuerScheme: String
        var drain: Duration
        var limits: ServerLimits
        var retention: Duration
        var addressRetention: Duration = .seconds(30 * 86_400)
        /// The console cookie's `Secure` attribute: off only in `modgud dev` (plain HTTP on loopback).
        var consoleSecureCookie = true
        /// Serve the console on the public port too (`modgud dev` always does; it is loopback).
        var consoleOnPublicPort = false
    }

    static func run(core: ModgudCore, settings: Settings, configuration: ModgudConfiguration, mail: any MailTransport) async throws {
        try await run(cells: [("", core)], directory: nil, settings: settings, configuration: configuration, mail: mail)
    }

    /// Serves every cell (issue 71) with one HTTP listener: each cell's background services run
    /// as a single-database instance's do, and the directory is followed for placements. The
    /// home cell (the first) answers health, the console and hosts no realm claims.
    static func run(
        cells: [(name: String, core: ModgudCore)], directory: CellServing.Following?, settings: Settings, configuration: ModgudConfiguration,
        mail: any MailTransport
    ) async throws {
        var logger = Logger(label: "modgud")
        logger.logLevel = .info
        logger.info("starting", metadata: ["tasks_on": "\(GlobalExecutor.isNIO ? "nio-event-loops" : "cooperative-pool")", "cells": "\(cells.count)"])
        let home = cells[0].core
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        for (index, cell) in cells.enumerated() {
            services += try backgroundServices(
                core: cell.core, samplesMetrics: index == 0, settings: settings, configuration: configuration, mail: mail, logger: logger)
        }
        if let directory { services.append(.init(service: CellDirectoryService(following: directory))) }
        let http = HTTPConfiguration(
            issuerScheme: settings.issuerScheme, adminToken: configuration.adminToken, trustedProxies: configuration.trustedProxies,
            limits: settings.limits, metrics: MetricsExposition.registry)
        var console = consoleConfiguration(settings: settings, configuration: configuration)
        if let directory = directory?.directory { console.cells = { await CellHealth.statuses(of: directory.map) } }
        let publicConsole = settings.consoleOnPublicPort || configuration.console.onPublicPort ? console : nil
        let address = ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "modgud")
        if let directory {
            services.append(
                .init(service: buildCellApplication(cells: cells, directory: directory.directory, hosts: directory.hosts, configuration: http, server: address, console: publicConsole, logger: logger)))
        } else {
            services.append(.init(service: buildApplication(core: home, configuration: http, server: address, console: publicConsole, logger: logger)))
        }
        if let port = configuration.console.port {
            // The console's own listener (docs/operations/console.md): loopback by default.
            services.append(
                .init(
                    service: buildConsoleApplication(
                        core: home, configuration: http, console: console,
                        server: ApplicationConfiguration(address: .hostname(configuration.console.host, port: port), serverName: "modgud-console"),
                        logger: logger)))
        }
        services.append(.init(service: DrainService(readiness: cells.map(\.core.readiness), delay: settings.drain, logger: logger)))
        var group = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // A request that never finishes must not hold the shutdown forever: after the drain
        // and 30 s more, whatever still runs is cancelled.
        group.maximumGracefulShutdownDuration = settings.drain + .seconds(30)
        try await ServiceGroup(configuration: group).run()
    }

    /// One cell's background services, in their stopping order's reverse: the settings
    /// listener, the projection daemon, the audit log's integrator, the mail dispatcher, the
    /// signals, the maintenance loop and the console's rebuilds. `/metrics`' state gauges are
    /// sampled from the home cell only (`samplesMetrics`), so no two cells overwrite them.
    private static func backgroundServices(
        core: ModgudCore, samplesMetrics: Bool, settings: Settings, configuration: ModgudConfiguration, mail: any MailTransport, logger: Logger
    ) throws -> [ServiceGroupConfiguration.ServiceConfiguration] {
        let signals = SharedSignalsService(
            transmitter: core.makeSignalTransmitter(), pusher: core.makeSignalPusher(settings: configuration.signalPush),
            relay: core.makeSignalRelay())
        let dispatcher = try core.makeMailDispatcher(transport: mail, settings: configuration.mailDispatcher)
        let maintenance = MaintenanceService(
            sampler: samplesMetrics ? core.makeMetricsSampler(outbox: dispatcher.outbox) : nil,
            housekeeping: core.makeHousekeeping(
                retention: settings.retention, addressRetention: settings.addressRetention, console: configuration.console.settings),
            tally: core.clientAttestation?.tally, logger: logger)
        return [
            .init(service: SettingsListenerService(listener: core.makeSettingsChangeListener(logger: logger))),
            .init(service: ProjectionDaemonService(daemon: core.makeProjectionDaemon())),
            .init(service: AuditLogService(integrator: core.makeAuditLogIntegrator(settings: configuration.auditLog))),
            .init(service: MailDispatcherService(dispatcher: dispatcher)), .init(service: signals), .init(service: maintenance),
            .init(service: RebuildRunnerService(runner: core.operations.rebuilds)),
        ]
    }

    /// The console's configuration: its own names (accepted by default with the realms' hosts)
    /// are each listener it is on.
    private static func consoleConfiguration(settings: Settings, configuration: ModgudConfiguration) -> ConsoleConfiguration {
        var console = ConsoleConfiguration(
            settings: configuration.console.settings, secureCookie: settings.consoleSecureCookie, trustedProxies: configuration.trustedProxies)
        console.hostnames = configuration.console.hostnames
        if settings.consoleOnPublicPort || configuration.console.onPublicPort {
            console.ownHostnames.formUnion(ConsoleConfiguration.ownHostnames(listeningOn: settings.host))
        }
        if configuration.console.port != nil {
            console.ownHostnames.formUnion(ConsoleConfiguration.ownHostnames(listeningOn: configuration.console.host))
        }
        return console
    }
}

/// The cell directory's follower as a lifecycle service (issue 71).
struct CellDirectoryService: Service {
    let following: CellServing.Following

    func run() async throws {
        let (hosts, pools) = (following.hosts, following.pools)
        await cancelWhenGracefulShutdown {
            await following.directory.follow(configuration: following.configuration) { await hosts.refresh(cells: pools) }
        }
    }
}

/// The projection daemon as a lifecycle service.
struct ProjectionDaemonService: Service {
    let daemon: ProjectionDaemon

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await daemon.run()
        }
    }
}

/// The audit log's integrator as a lifecycle service (`AuditLogIntegrator.run`).
struct AuditLogService: Service {
    let integrator: AuditLogIntegrator

    func run() async throws {
        let logger = Logger(label: "modgud.audit-log")
        await cancelWhenGracefulShutdown {
            await integrator.run { error, _ in
                logger.warning("audit log integrator cannot reach the database; retrying", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// The Shared Signals transmitter of this instance (issue 30): the log follower that enqueues
/// SETs (one instance at a time, by its advisory lock), the push deliverer, and the relay of
/// other instances' enqueue notifications to this instance's long polls.
struct SharedSignalsService: Service {
    let transmitter: SignalTransmitter
    let pusher: SignalPusher
    /// Rings this instance's wakeups on other instances' enqueue notifications, until cancelled.
    let relay: @Sendable () async -> Void

    func run() async throws {
        let logger = Logger(label: "modgud.ssf")
        let (transmitter, pusher, relay) = (self.transmitter, self.pusher, self.relay)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await transmitter.run { error, _ in
                        logger.warning("shared signals transmitter cannot reach the database; retrying", metadata: ["error": "\(error)"])
                    }
                }
                group.addTask { await pusher.run() }
                group.addTask { await relay() }
            }
        }
    }
}

/// The console's projection rebuilds as a lifecycle service: a rebuild running at shutdown
/// is cancelled and awaited after the HTTP server has stopped (issue 42).
struct RebuildRunnerService: Service {
    let runner: RebuildRunner

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await runner.run()
        }
    }
}

/// The settings-change listener as a lifecycle service.
struct SettingsListenerService: Service {
    let listener: SettingsChangeListener

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await listener.run()
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

/// On SIGTERM: report not ready at once, then give load balancers `delay` to notice before
/// the HTTP server (the next service to stop) closes its listener.
struct DrainService: Service {
    /// Every cell's (one, without cells).
    let readiness: [ReadinessProbe]
    let delay: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        for probe in readiness { probe.beginDrain() }
        logger.info("draining: /health/ready answers 503", metadata: ["drain_seconds": "\(delay.components.seconds)"])
        try? await Task.sleep(for: delay)
    }
}
