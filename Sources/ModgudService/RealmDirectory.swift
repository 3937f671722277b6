import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// Finds the realm of a request by its Host (SPEC.md section 0), from the inline read model,
/// with a short per-instance cache.
public actor RealmDirectory {
    public struct Entry: Sendable {
        public var realmID: String
        public var settings: RealmSettings
    }

    private let pool: PQPool
    private var cache: [String: (entry: Entry?, at: ContinuousClock.Instant)] = [:]
    private let maxAge: Duration

    public init(pool: PQPool, maxAge: Duration = .seconds(5)) {
        self.pool = pool
        self.maxAge = maxAge
    }

    /// The realm serving `host` (port and case ignored), or nil.
    public func realm(forHost host: String) async throws -> Entry? {
        let name = Self.normalize(host)
        if let cached = cache[name], ContinuousClock.now - cached.at < maxAge { return cached.entry }
        let row = try await pool.query(
            "SELECT r.realm_id, r.settings::text FROM realm_hosts h JOIN realms r ON r.realm_id = h.realm_id WHERE h.host = \(name)"
        ).first
        let entry = try row.map { row in
            Entry(
                realmID: try row.decode(String.self, at: 0),
                settings: try EventJSON.decode(RealmSettings.self, from: Array(try row.decode(String.self, at: 1).utf8)))
        }
        if cache.count > 10_000 { cache.removeAll() }
        cache[name] = (entry, .now)
        return entry
    }

    /// `Login.Example.com:8443` → `login.example.com`; `[::1]:80` → `::1`.
    static func normalize(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("[") , let end = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<end])
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return name
    }
}
