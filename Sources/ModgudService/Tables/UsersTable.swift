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
    }

    /// The realm's users in registration order, a page at a time by keyset (the page starts
    /// after or ends before a user: an index range scan of `users_by_registration` whatever
    /// the page, where an OFFSET would walk every row before it).
    static func list(realm: String, limit: Int, page: UserListPage = .first, pool: PQPool) async throws -> [Listed] {
        let columns = "u.user_id, u.email, u.status, " + SubjectKeysTable.sealedKeyOfUserSQL(idColumn: "u.user_id")
        let query: PQQuery
        switch page {
        case .first:
            query = """
                SELECT \(unescaped: columns) FROM users u
                WHERE u.realm_id = \(realm) ORDER BY u.registered_at, u.user_id LIMIT \(limit)
                """
        case .after(let user):
            query = """
                SELECT \(unescaped: columns) FROM users u
                WHERE u.realm_id = \(realm)
                  AND (u.registered_at, u.user_id) > (SELECT registered_at, user_id FROM users WHERE user_id = \(user))
                ORDER BY u.registered_at, u.user_id LIMIT \(limit)
                """
        case .before(let user):
            query = """
                SELECT \(unescaped: columns) FROM users u
                WHERE u.realm_id = \(realm)
                  AND (u.registered_at, u.user_id) < (SELECT registered_at, user_id FROM users WHERE user_id = \(user))
                ORDER BY u.registered_at DESC, u.user_id DESC LIMIT \(limit)
                """
        }
        let rows = try await pool.query(query).rows.map {
            Listed(
                userID: try $0.decode(UUID.self, at: 0), storedEmail: try $0.decode(String?.self, at: 1), status: try $0.decode(String.self, at: 2),
                sealedKey: try $0.decode(PQBytes?.self, at: 3)?.bytes)
        }
        if case .before = page { return rows.reversed() }
        return rows
    }

    /// How many users the realm has (every status).
    static func count(realm: String, pool: PQPool) async throws -> Int {
        try await pool.query("SELECT count(*) FROM users WHERE realm_id = \(realm)").first?.decode(Int.self, at: 0) ?? 0
    }
}
