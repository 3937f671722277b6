import Foundation
import PQ

/// The one home of `dpop_jtis`' SQL: DPoP proof ids, single use per key until they expire.
enum DPoPReplayTable {
    /// Records the jti; answers a row only when it was new or its earlier use has expired
    /// (the database decides between instances and concurrent requests).
    static func claim(jkt: String, jti: String, now: Date, until expiry: Date) -> PQQuery {
        """
        INSERT INTO dpop_jtis (jkt, jti, expires_at) VALUES (\(jkt), \(jti), \(expiry))
        ON CONFLICT (jkt, jti) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE dpop_jtis.expires_at < \(now)
        RETURNING 1
        """
    }

    /// Makes the current (pipelined) transaction commit without waiting for its WAL flush: for
    /// a grant's checks with its first read (`GrantChecks`), whose claim a synchronous commit
    /// always follows before anything is granted, and whose count is unlogged.
    static let commitWithTheNextFlush: PQQuery = "SELECT set_config('synchronous_commit', 'off', true)"

    /// Deletes expired jtis.
    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM dpop_jtis WHERE expires_at < \(cutoff)")
    }
}
