import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one home of the `users` read model's SQL (docs/architecture.md, "House habits"): the
/// statements `UserDirectoryProjection` applies, the lookup by address, and the operators' list.
enum UsersTable {
    /// Whether an append failed because the address is held by another account (the unique
    /// address index of `users`, written by `UserDirectoryProjection`): a lost race.
    static func isAddressTaken(_ error: any Error) -> Bool {
        guard case EventStoreError.uniqueValueTaken(let projection, _)? = error as? EventStoreError else { return false }
        return projection == UserDirectoryProjection().name
    }

    // MARK: Statements (applied inline by the projection; `table` is live or its rebuild copy)

    static func insert(table: String, realm: String, _ registered: UserRegistered) -> PQQuery {
        """
        INSERT INTO \(unescaped: table)
            (realm_id, user_id, email, email_key, email_confirmed, username, first_name, last_name, security_stamp)
        VALUES (\(realm), \(registered.userID), \(registered.email.stored),
                \(unescaped: emailKey(registered)), \(registered.emailConfirmed),
                \(registered.username?.stored), \(registered.firstName?.stored), \(registered.lastName?.stored), \(registered.securityStamp))
        """
    }

    /// An update of one user's row: `assignments` use `$3` onwards for `values` (`$1` and
    /// `$2` identify the row).
    static func set(table: String, realm: String, userID: UUID, _ assignments: String, _ values: [any PQEncodable] = []) -> PQQuery {
        PQQuery(
            "UPDATE \(table) SET \(assignments) WHERE realm_id = $1 AND user_id = $2",
            binds: [realm.pqBind, userID.pqBind] + values.map(\.pqBind))
    }

    /// How the directory finds the address (an SQL expression over the insert's binds, `$2`
    /// the user id and `$3` the stored address): the blind index kept with the user's key, or
    /// (events written before sealing began) `plain:` and the address, until the log is
    /// rewritten.
    static func emailKey(_ registered: UserRegistered) -> String {
        switch registered.email {
        case .sealed:
            SubjectKeysTable.emailIndexOfUserParameter2
        case .plain:
            "('plain:' || $3::text)"
        }
    }

    // MARK: Queries

    /// A live account by its address, without the directory holding the address: by the
    /// address's blind index (`PersonalDataVault.blindIndex`), or by the legacy key of a row
    /// projected from an event written before sealing began.
    /// - Parameter including: statuses found besides the live ones (`deleted`: erasure).
    static func userID(realm: String, email: EmailAddress, index: String, pool: PQPool, including: [String] = []) async throws -> UUID? {
        try await pool.query(
            """
            SELECT user_id FROM users
            WHERE realm_id = \(realm) AND email_key IN (\(index), \("plain:" + email.value))
              AND (status NOT IN ('deleted', 'erased') OR status = ANY(\(including)))
            ORDER BY email_key = \(index) DESC, status = 'deleted' LIMIT 1
            """
        ).first?.decode(UUID.self, at: 0)
    }

    /// One user as the operators' list shows it: the stored (sealed) address, with the
    /// user's sealed data key so it opens without a round trip of its own.
    struct Listed: Sendable {
        var userID: UUID
        var storedEmail: String?
        var status: String
        var sealedKey: [UInt8]?
        var registeredAt: Date
        var lastSignInAt: Date?
    }

    /// The realm's users in `order`, a page at a time by keyset (the page starts after or
    /// ends before a user: in registration order an index range scan of
    /// `users_by_registration` whatever the page, where an OFFSET would walk every row
    /// before it; by last sign-in a join with `user_sign_ins` and a top-N sort).
    static func list(realm: String, limit: Int, page: UserListPage = .first, order: UserListOrder = .registered, pool: PQPool) async throws
        -> [Listed]
    {
        let columns = "u.user_id, u.email, u.status, " + SubjectKeysTable.sealedKeyOfUserSQL(idColumn: "u.user_id") + ", u.registered_at, s.signed_in_at"
        let from = "users u LEFT JOIN user_sign_ins s ON s.user_id = u.user_id"
        let (key, descending) = order.key
        // A page before a user reads backwards from it and is turned round.
        let backwards = { if case .before = page { true } else { false } }()
        let direction = descending != backwards ? "DESC" : "ASC"
        var cursor: UUID?
        switch page {
        case .first: cursor = nil
        case .after(let user), .before(let user): cursor = user
        }
        let comparison = direction == "DESC" ? "<" : ">"
        let query: PQQuery =
            """
            SELECT \(unescaped: columns) FROM \(unescaped: from)
            WHERE u.realm_id = \(realm)
              AND (\(cursor)::uuid IS NULL OR (\(unescaped: key), u.user_id) \(unescaped: comparison)
                   (SELECT \(unescaped: key), u.user_id FROM \(unescaped: from) WHERE u.user_id = \(cursor)::uuid))
            ORDER BY \(unescaped: key) \(unescaped: direction), u.user_id \(unescaped: direction) LIMIT \(limit)
            """
        let rows = try await pool.query(query).rows.map {
            Listed(
                userID: try $0.decode(UUID.self, at: 0), storedEmail: try $0.decode(String?.self, at: 1), status: try $0.decode(String.self, at: 2),
                sealedKey: try $0.decode(PQBytes?.self, at: 3)?.bytes, registeredAt: try $0.decode(Date.self, at: 4),
                lastSignInAt: try $0.decode(Date?.self, at: 5))
        }
        return backwards ? rows.reversed() : rows
    }

    /// How many users the realm has (every status).
    static func count(realm: String, pool: PQPool) async throws -> Int {
        try await pool.query("SELECT count(*) FROM users WHERE realm_id = \(realm)").first?.decode(Int.self, at: 0) ?? 0
    }
}
