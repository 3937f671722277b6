import Foundation
import PQ

/// The one home of `client_attestation_counts`' SQL (migration 0025, issue 47).
enum ClientAttestationCountsTable {
    /// Adds `count` to a client's figure for `outcome`.
    static func add(realm: String, clientID: String, outcome: String, count: Int, now: Date) -> PQQuery {
        """
        INSERT INTO client_attestation_counts AS c (realm_id, client_id, outcome, count, updated_at)
        VALUES (\(realm), \(clientID), \(outcome), \(Int64(count)), \(now))
        ON CONFLICT (realm_id, client_id, outcome) DO UPDATE SET count = c.count + excluded.count, updated_at = excluded.updated_at
        """
    }

    static func counts(realm: String, pool: PQPool) async throws -> [(clientID: String, outcome: String, count: Int)] {
        try await pool.query("SELECT client_id, outcome, count FROM client_attestation_counts WHERE realm_id = \(realm)").rows.map {
            (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), Int(try $0.decode(Int64.self, at: 2)))
        }
    }
}
