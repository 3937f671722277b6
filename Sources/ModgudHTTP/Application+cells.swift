import Hummingbird
import HummingbirdCore
import Logging
import ModgudService

/// The HTTP application of an instance serving several cells (issue 71): every cell's routes
/// (`buildRouter` over its core) behind a `CellRouter`, under the same connection limits as
/// `buildApplication`. The console, when on the public port, is the home cell's (the first).
public func buildCellApplication(
    cells: [(name: String, core: ModgudCore)], directory: CellDirectory, hosts: CellHostIndex, configuration: HTTPConfiguration = HTTPConfiguration(),
    server: ApplicationConfiguration = ApplicationConfiguration(), console: ConsoleConfiguration? = nil,
    logger: Logger = Logger(label: "modgud.http")
) -> some ApplicationProtocol {
    let routed = cells.enumerated().map { index, cell in
        CellRouter.Cell(
            name: cell.name, realms: cell.core.realmDirectory, readiness: cell.core.readiness, router: buildRouter(core: cell.core, configuration: configuration, console: index == 0 ? console : nil))
    }
    let limits = configuration.limits
    var server = server
    server.availableConnectionsDelegate = MaximumAvailableConnections(limits.maxConnections, logger: logger)
    return Application(
        router: CellRouter(cells: routed, directory: directory, hosts: hosts),
        server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: limits)])), configuration: server,
        logger: logger)
}
