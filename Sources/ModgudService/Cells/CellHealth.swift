import Foundation
import PQ

/// How `modgud cell list` sees one cell: whether its URL reaches a primary, and the realms it holds.
public enum CellHealth {
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
