import Foundation
import PQ

/// The one home of `app_attest_keys`' SQL (issue 47): the attester's App Attest keys.
enum AppAttestKeysTable {
    struct Row: Sendable {
        var clientID: String
        var appID: String
        var publicKey: [UInt8]
        var counter: Int64
    }

    /// Stores a newly attested key; answers a row only if the key id was new (a replayed
    /// attestation finds it taken).
    static func insert(
        realm: String, keyID: [UInt8], clientID: String, appID: String, environment: String, publicKey: [UInt8], now: Date
    ) -> PQQuery {
        """
        INSERT INTO app_attest_keys (realm_id, key_id, client_id, app_id, environment, public_key, counter, attested_at, last_used_at)
        VALUES (\(realm), \(PQBytes(keyID)), \(clientID), \(appID), \(environment), \(PQBytes(publicKey)), 0, \(now), \(now))
        ON CONFLICT DO NOTHING RETURNING 1
        """
    }

    static func key(realm: String, keyID: [UInt8], pool: PQPool) async throws -> Row? {
        guard
            let row = try await pool.query(
                "SELECT client_id, app_id, public_key, counter FROM app_attest_keys WHERE realm_id = \(realm) AND key_id = \(PQBytes(keyID))"
            ).first
        else { return nil }
        return Row(
            clientID: try row.decode(String.self, at: 0), appID: try row.decode(String.self, at: 1),
            publicKey: try row.decode(PQBytes.self, at: 2).bytes, counter: try row.decode(Int64.self, at: 3))
    }

    /// Raises the key's counter to `counter`; answers a row only if it was lower (Apple's step
    /// 5: strictly increasing, decided by the database between concurrent assertions).
    static func advance(realm: String, keyID: [UInt8], counter: Int64, now: Date) -> PQQuery {
        """
        UPDATE app_attest_keys SET counter = \(counter), last_used_at = \(now)
        WHERE realm_id = \(realm) AND key_id = \(PQBytes(keyID)) AND counter < \(counter) RETURNING 1
        """
    }

    /// How many keys each client of a realm has attested (the console, the CLI).
    static func counts(realm: String, pool: PQPool) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try await pool.query("SELECT client_id, count(*) FROM app_attest_keys WHERE realm_id = \(realm) GROUP BY client_id").rows {
            counts[try row.decode(String.self, at: 0)] = Int(try row.decode(Int64.self, at: 1))
        }
        return counts
    }
}
