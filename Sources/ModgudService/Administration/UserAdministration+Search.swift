import Foundation

/// Finding users by the start of their address (issue 43). Addresses are sealed under each
/// user's own key (docs/retention.md), so no index holds them and none can find the start of
/// one: the exact address is found by its blind index (`find`), and a start by opening the
/// realm's addresses in registration order, a bounded number per search, saying where the
/// next search resumes. The console shows how far a search looked.
extension UserAdministration {
    /// What one search found, and how far it looked.
    public struct AddressSearch: Sendable, Equatable {
        public var matches: [UserSummary]
        /// How many users' addresses were opened.
        public var scanned: Int
        /// The last user looked at, when the search stopped before the end of the realm
        /// (at `limit` matches or at its budget): the next search resumes after it.
        public var resumeAfter: UUID?
    }

    /// How many rows one read of a search takes.
    static let searchBatch = 500

    /// Users whose address starts with `prefix`, case-insensitively; a prefix that starts with
    /// `@` matches the start of the domain (`@example.` finds every `example.*` address).
    /// - Parameters:
    ///   - after: resume after this user (a previous search's `resumeAfter`).
    ///   - limit: stop at this many matches.
    ///   - budget: open at most this many addresses.
    public func search(realm: String, addressPrefix prefix: String, after: UUID? = nil, limit: Int = 50, budget: Int = 5_000) async throws
        -> AddressSearch
    {
        let needle = prefix.trimmingCharacters(in: .whitespaces).lowercased()
        var found = AddressSearch(matches: [], scanned: 0, resumeAfter: nil)
        guard !needle.isEmpty else { return found }
        var page: UserListPage = after.map { .after($0) } ?? .first
        return try await ServiceRefusal.translating {
            while found.scanned < budget {
                let wanted = min(Self.searchBatch, budget - found.scanned)
                let rows = try await UsersTable.list(realm: realm, limit: wanted, page: page, pool: pool)
                for row in rows {
                    found.scanned += 1
                    let user = try await summary(of: row)
                    if let email = user.email?.lowercased(), Self.address(email, matches: needle) { found.matches.append(user) }
                    if found.matches.count == limit || found.scanned == budget {
                        found.resumeAfter = row.userID == rows.last?.userID && rows.count < wanted ? nil : row.userID
                        return found
                    }
                }
                guard rows.count == wanted, let last = rows.last else { return found }
                page = .after(last.userID)
            }
            return found
        }
    }

    static func address(_ email: String, matches needle: String) -> Bool {
        needle.hasPrefix("@") ? email.contains(needle) : email.hasPrefix(needle)
    }
}
