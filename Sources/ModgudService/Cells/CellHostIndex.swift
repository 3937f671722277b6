import PQ
import Synchronization

/// Which realm each cell serves on each host (issue 71), held in memory so that a request is
/// routed by its host before any SQL (`CellRouter`): a cell that does not answer costs its own
/// realms, never another cell's. Read from every cell's `realm_hosts` (a realm's hosts have one
/// home, its settings in its cell) when the instance starts and on every wake of the directory's
/// follower (a change's NOTIFY, or the poll). A cell that cannot be read keeps what was last
/// read from it.
public final class CellHostIndex: Sendable {
    /// host → (cell → realm).
    private let entries = Mutex<[String: [String: String]]>([:])

    public init() {}

    /// The cells that know `host` (normalized) and the realm each serves on it; nil when none
    /// did at the last refresh (a realm created since: the router asks the cells).
    public func holders(ofHost host: String) -> [String: String]? {
        entries.withLock { $0[host] }
    }

    /// Reads every cell's hosts again.
    public func refresh(cells: [(name: String, pool: PQPool)]) async {
        for cell in cells {
            guard let rows = try? await cell.pool.query(RealmTables.allHosts) else { continue }
            let read = rows.rows.compactMap { row -> (String, String)? in
                guard let host = try? row.decode(String.self, at: 0), let realm = try? row.decode(String.self, at: 1) else { return nil }
                return (host, realm)
            }
            replace(cell: cell.name, with: read)
        }
    }

    /// Puts `hosts` (host, realm) in place of everything known of `cell`.
    func replace(cell: String, with hosts: [(String, String)]) {
        entries.withLock { entries in
            for host in entries.keys {
                entries[host]?[cell] = nil
                if entries[host]?.isEmpty == true { entries[host] = nil }
            }
            for (host, realm) in hosts { entries[host, default: [:]][cell] = realm }
        }
    }
}
