import EventStorePostgres
import Foundation
import PQ
import Synchronization

/// The cell directory (issue 71): a small PostgreSQL database of its own that says which cells
/// exist and which cell serves each realm. An instance holds the map in memory, reads it on
/// every request without a round trip, and reloads it when the directory NOTIFYs a change, with
/// a poll as the fallback (`follow`).
///
/// The directory is HA the way a cell is: its URL may name a pg_auto_failover formation's
/// nodes (`target_session_attrs=read-write`), and libpq finds the primary.
public final class CellDirectory: Sendable {
    private let pool: PQPool
    private let loaded: Mutex<CellMap>

    /// Opens the directory, creates its tables if missing, and loads the map.
    public init(pool: PQPool) async throws {
        self.pool = pool
        try await Self.migrate(pool: pool)
        loaded = Mutex(try await Self.read(pool: pool))
    }

    /// The map as last loaded.
    public var map: CellMap { loaded.withLock { $0 } }

    /// Reads the map again (after a NOTIFY, or by the poll).
    @discardableResult
    public func reload() async throws -> CellMap {
        let fresh = try await Self.read(pool: pool)
        loaded.withLock { $0 = fresh }
        return fresh
    }

    /// Reloads on every change the directory announces, and every `poll` in any case (a
    /// notification sent while the listener reconnects is missed), then runs `then` (the
    /// cells' hosts are read again), until cancelled. A directory that does not answer leaves
    /// the last map in place: routing goes on.
    public func follow(configuration: PQConfiguration, poll: Duration = .seconds(5), then: @Sendable () async -> Void = {}) async {
        let listener = NotificationListener(configuration: configuration, channel: CellDirectoryTable.channel)
        while !Task.isCancelled {
            await listener.wait(timeout: poll)
            _ = try? await reload()
            await then()
        }
        await listener.close()
    }

    /// Creates the directory's tables if they are missing.
    public static func migrate(pool: PQPool) async throws {
        for statement in CellDirectoryTable.schema { _ = try await pool.query(statement) }
    }

    /// Adds a cell, or changes its database URL.
    public static func addCell(name: String, databaseURL: String, pool: PQPool) async throws {
        try await migrate(pool: pool)
        _ = try await pool.pipeline([CellDirectoryTable.addCell(name: name, databaseURL: databaseURL), CellDirectoryTable.notify])
    }

    /// Places a realm in a cell (or marks it moving there). Every instance routes by it after
    /// its next reload: at once on the NOTIFY, within the poll interval at worst.
    public static func place(realm: String, cell: String, state: CellMap.State = .serving, pool: PQPool) async throws {
        let map = try await read(pool: pool)
        guard map.cells.contains(where: { $0.name == cell }) else {
            throw ServiceRefusal(.notFound, "Cell.NotFound", "No cell is named \(cell): add it with `modgud cell add`.")
        }
        _ = try await pool.pipeline([CellDirectoryTable.place(realm: realm, cell: cell, state: state), CellDirectoryTable.notify])
    }

    /// The directory's map, read now.
    public static func read(pool: PQPool) async throws -> CellMap {
        let results = try await pool.pipeline([CellDirectoryTable.cells, CellDirectoryTable.placements])
        return try CellDirectoryTable.map(cells: results[0], placements: results[1])
    }
}
