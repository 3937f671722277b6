import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ModgudHTTP
import ModgudService
import PQ
import ServiceLifecycle

/// `modgud bench floor-server`: the floor's routes (`buildBenchFloorApplication`) in a process
/// of their own, started by `bench load` for its floor scenarios as it starts `serve` for the
/// others: the same generator, connections and database, a server doing only the floor's work.
struct FloorServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "floor-server", abstract: "Serve the floor's routes (started by bench load).", shouldDisplay: false)

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let port = environment["MODGUD_PORT"].flatMap(Int.init) else { throw CommandError("set MODGUD_PORT") }
        let pool = PQPool(
            configuration: .fromEnvironment(), options: .init(maxConnections: environment["MODGUD_DB_POOL_SIZE"].flatMap(Int.init) ?? 32))
        let floor = try await BenchFloor.open(pool: pool)
        let logger = Logger(label: "modgud.bench-floor")
        let app = buildBenchFloorApplication(
            floor: floor, server: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port), serverName: "modgud-floor"))
        let group = ServiceGroup(configuration: .init(services: [.init(service: app)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await pool.close()
    }
}
