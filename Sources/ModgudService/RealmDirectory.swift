import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// Finds the realm of a request by its Host (docs/spec.md section 0), and a realm's settings by
/// id, from the inline read model, held per instance (`SettingsCache`: dropped on change).
public final class RealmDirectory: Sendable {
    public struct Entry: Sendable {
        public var realmID: String
        public var settings: RealmSettings

        public init(realmID: String, settings: RealmSettings) {
            self.realmID = realmID
            self.settings = settings
        }
    }

    private let pool: PQPool
    private let byHost: SettingsCache<String, Entry?>
    private let byID: SettingsCache<String, RealmSettings?>

    public init(pool: PQPool, maxAge: Duration = .seconds(5)) {
        self.pool = pool
        byHost = SettingsCache(maxAge: maxAge)
        byID = SettingsCache(maxAge: maxAge)
    }

    /// The realm serving `host` (port and case ignored), or nil.
    public func realm(forHost host: String) async throws -> Entry? {
        let name = Self.normalize(host)
        return try await byHost.value(for: name) {
            let row = try await pool.query(
                "SELECT r.realm_id, r.settings::text FROM realm_hosts h JOIN realms r ON r.realm_id = h.realm_id WHERE h.host = \(name)"
            ).first
            return try row.map { row in
                Entry(
                    realmID: try row.decode(String.self, at: 0),
                    settings: try EventJSON.decode(RealmSettings.self, from: Array(try row.decode(String.self, at: 1).utf8)))
            }
        }
    }

    /// A realm's settings, or nil when there is no such realm.
    public func settings(realm: String) async throws -> RealmSettings? {
        try await byID.value(for: realm) {
            guard let text = try await pool.query("SELECT settings::text FROM realms WHERE realm_id = \(realm)").first?.decode(String.self, at: 0)
            else { return nil }
            return try EventJSON.decode(RealmSettings.self, from: Array(text.utf8))
        }
    }

    /// Drops a realm (its hosts may have moved: every host entry goes too), or everything.
    public func invalidate(realm: String?) {
        byHost.invalidateAll()
        if let realm { byID.invalidate(realm) } else { byID.invalidateAll() }
    }

    /// `Login.Example.com:8443` → `login.example.com`; `[::1]:80` → `::1`.
    static func normalize(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("["), let end = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<end])
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return name
    }
}
