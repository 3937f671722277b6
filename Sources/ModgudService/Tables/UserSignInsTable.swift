import Foundation
import PQ

/// The one home of the `user_sign_ins` read model's SQL (docs/architecture.md, "House
/// habits"): the upsert `UserSignInsProjection` applies. The users list joins the table
/// (`UsersTable.list`).
enum UserSignInsTable {
    /// Keeps the later of the stored sign-in and this one.
    static func upsert(table: String, realm: String, userID: UUID, at time: Date, client: String) -> PQQuery {
        """
        INSERT INTO \(unescaped: table) AS s (realm_id, user_id, signed_in_at, client_id)
        VALUES (\(realm), \(userID), \(time), \(client))
        ON CONFLICT (user_id) DO UPDATE SET signed_in_at = EXCLUDED.signed_in_at, client_id = EXCLUDED.client_id
        WHERE s.signed_in_at < EXCLUDED.signed_in_at
        """
    }
}
