import PQ

/// The one home of the `personal_data_sealing` table's SQL (migration 0009: whether events
/// written before sealing began may remain) and of the advisory lock one `seal-legacy` run
/// holds at a time.
enum PersonalDataSealingTable {
    /// "modgud" + issue 13.
    static let lockKey: Int64 = 0x6D6F_6467_7564_0013

    /// Takes the run's session lock on `connection`; false when another run holds it.
    static func tryLock(on connection: PQConnection) async throws -> Bool {
        try await connection.query("SELECT pg_try_advisory_lock(\(lockKey))").first?.decode(Bool.self, at: 0) == true
    }

    static func unlock(on connection: PQConnection) async throws {
        _ = try await connection.query("SELECT pg_advisory_unlock(\(lockKey))")
    }

    /// Whether events written before sealing may remain.
    static func pending(pool: PQPool) async throws -> Bool {
        try await pool.query("SELECT legacy_events > 0 AND sealed_at IS NULL FROM personal_data_sealing").first?.decode(Bool.self, at: 0) ?? false
    }

    /// Records a completed run: no legacy events remain.
    static func markSealed(pool: PQPool) async throws {
        _ = try await pool.query("UPDATE personal_data_sealing SET legacy_events = 0, sealed_at = now()")
    }
}
