import PQ

/// The one home of `audit_log_keys`' SQL: each realm's Ed25519 audit log key, its private
/// half sealed under the master key.
enum AuditLogKeysTable {
    struct Row: Sendable {
        var name: String
        var publicKey: [UInt8]
        var sealedPrivateKey: [UInt8]
    }

    /// Stores a new key unless the realm already has one (another instance may have won).
    static func insert(realm: String, _ row: Row) -> PQQuery {
        """
        INSERT INTO audit_log_keys (realm, key_name, public_key, sealed_private_key)
        VALUES (\(realm), \(row.name), \(PQBytes(row.publicKey)), \(PQBytes(row.sealedPrivateKey)))
        ON CONFLICT (realm) DO NOTHING
        """
    }

    static func find(realm: String, pool: PQPool) async throws -> Row? {
        try await pool.query("SELECT key_name, public_key, sealed_private_key FROM audit_log_keys WHERE realm = \(realm)").first.map {
            Row(name: try $0.decode(String.self, at: 0), publicKey: try $0.decode(PQBytes.self, at: 1).bytes,
                sealedPrivateKey: try $0.decode(PQBytes.self, at: 2).bytes)
        }
    }
}
