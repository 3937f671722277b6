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
            try await RealmTables.realm(forHost: name, pool: pool).map { Entry(realmID: $0.realmID, settings: $0.settings) }
        }
    }

    /// A realm's settings, or nil when there is no such realm.
    public func settings(realm: String) async throws -> RealmSettings? {
        try await byID.value(for: realm) {
            try await RealmTables.settings(realm: realm, pool: pool)
        }
    }

    /// A realm's settings for a request that names it: an unknown realm is the request's error.
    func requiredSettings(_ realm: String) async throws -> RealmSettings {
        guard let settings = try await settings(realm: realm) else { throw OAuthError.invalidRequest("Unknown realm.") }
        return settings
    }

    /// Drops a realm (its hosts may have moved: every host entry goes too), or everything.
    public func invalidate(realm: String?) {
        byHost.invalidateAll()
        if let realm { byID.invalidate(realm) } else { byID.invalidateAll() }
    }

    /// `Login.Example.com:8443` → `login.example.com`; `[::1]:80` → `::1`.
    public static func normalize(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("["), let end = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<end])
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return name
    }
}
