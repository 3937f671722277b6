import Foundation
import PQ

/// How `modgud cell list` and the console's health page see the cells: whether each URL reaches
/// a primary, the realms each holds, and those the directory places in it.
public enum CellHealth {
    /// One cell as an operator sees it.
    public struct Status: Sendable, Equatable {
        public var name: String
        /// `primary`, `standby` or `unreachable`.
        public var health: String
        /// The realms in its database; nil when it did not answer.
        public var held: [String]?
        public var placed: [String]
        public var databaseURL: String

        public init(name: String, health: String, held: [String]?, placed: [String], databaseURL: String) {
            (self.name, self.health, self.held, self.placed, self.databaseURL) = (name, health, held, placed, databaseURL)
        }
    }

    /// Every cell of `map`, probed at once, in the directory's order.
    public static func statuses(of map: CellMap) async -> [Status] {
        let probed = await withTaskGroup(of: (String, (health: String, realms: [String]?)).self) { group in
            for cell in map.cells { group.addTask { (cell.name, await probe(databaseURL: cell.databaseURL)) } }
            var probed: [String: (health: String, realms: [String]?)] = [:]
            for await (name, result) in group { probed[name] = result }
            return probed
        }
        return map.cells.map { cell in
            Status(
                name: cell.name, health: probed[cell.name]?.health ?? "unreachable", held: probed[cell.name]?.realms ?? nil,
                placed: map.placements.filter { $0.value.cell == cell.name }.keys.sorted(), databaseURL: cell.databaseURL)
        }
    }

    /// `primary`, `standby` (a URL without `target_session_attrs=read-write` reached a
    /// replica) or `unreachable`; the realms, when it answered.
    public static func probe(databaseURL: String) async -> (health: String, realms: [String]?) {
        let pool = PQPool(configuration: PQConfiguration(connectionString: databaseURL), options: .init(maxConnections: 1))
        defer { Task { await pool.close() } }
        do {
            let results = try await pool.pipeline([CellDirectoryTable.isStandby, RealmTables.realmIDs])
            let standby = try results[0].first?.decode(Bool.self, at: 0) ?? false
            return (standby ? "standby" : "primary", try results[1].rows.map { try $0.decode(String.self, at: 0) })
        } catch {
            return ("unreachable", nil)
        }
    }

    /// The URL without its password (`postgresql://user:secret@host/db` → `postgresql://user:***@host/db`,
    /// and `password=…` in a keyword/value string).
    public static func redacted(_ url: String) -> String {
        if let range = url.range(of: #"(?<=://)[^:/@]+:[^@]*(?=@)"#, options: .regularExpression) {
            let user = url[range].split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            return url.replacingCharacters(in: range, with: user + ":***")
        }
        return url.replacingOccurrences(of: #"password=\S+"#, with: "password=***", options: .regularExpression)
    }
}
