import Foundation
import PQ

/// The one home of `bench_floor`'s SQL (issue 49): the single row `modgud bench floor`'s grant
/// commits, in a table of its own so that no follower of the event log (projections, the audit
/// log, Shared Signals) spends anything on it.
enum BenchFloorTable {
    static let create: PQQuery = """
        CREATE TABLE IF NOT EXISTS bench_floor (
            id uuid PRIMARY KEY, client_id text NOT NULL, token_hash text NOT NULL, created_at timestamptz NOT NULL)
        """

    static func insert(id: UUID, clientID: String, tokenHash: String, now: Date) -> PQQuery {
        "INSERT INTO bench_floor (id, client_id, token_hash, created_at) VALUES (\(id), \(clientID), \(tokenHash), \(now))"
    }
}
