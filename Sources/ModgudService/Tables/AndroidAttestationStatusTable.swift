import Foundation
import PQ
import WebAuthn

/// The one home of `android_attestation_status`'s SQL (issue 66): the operator's import of
/// Google's status list, read at every Android key attestation.
public enum AndroidAttestationStatusTable {
    /// What is in force: the last import, or the shipped list before any.
    public struct Summary: Sendable {
        public var source: String
        public var entries: Int
        public var sha256: String
        public var importedAt: Date?
    }

    /// Replaces the list in one transaction (a concurrent attestation sees the old list or the
    /// new one, never a mix) and records the import.
    public static func replace(with list: AndroidAttestationStatusList, now: Date, pool: PQPool) async throws {
        let rows = String(decoding: try JSONEncoder().encode(list.entries), as: UTF8.self)
        let entries = list.entries.count, sha256 = list.sha256
        try await pool.transaction { connection in
            try connection.query("DELETE FROM android_attestation_status")
            try connection.query(
                """
                INSERT INTO android_attestation_status (serial, status, reason)
                SELECT serial, status, reason FROM jsonb_to_recordset(\(rows)::jsonb) AS x(serial text, status text, reason text)
                """)
            try connection.query(
                "INSERT INTO android_attestation_status_imports (imported_at, entries, sha256) VALUES (\(now), \(entries), \(sha256))")
        }
    }

    /// The serials among `serials` (any form) that the list in force refuses: one round trip.
    public static func revoked(among serials: [String], pool: PQPool) async throws -> RevokedSerials {
        let normalised = RevokedSerials(serials).serials.sorted()
        let wanted = String(decoding: try JSONEncoder().encode(normalised), as: UTF8.self)
        guard
            let row = try await pool.query(
                """
                SELECT EXISTS (SELECT 1 FROM android_attestation_status_imports),
                       coalesce((SELECT json_agg(serial)::text FROM android_attestation_status
                                 WHERE serial IN (SELECT jsonb_array_elements_text(\(wanted)::jsonb))), '[]')
                """
            ).first
        else { return RevokedSerials() }
        guard try row.decode(Bool.self, at: 0) else {
            return RevokedSerials(normalised.filter(AndroidAttestationStatusList.shipped.revokedSerials.serials.contains))
        }
        return RevokedSerials(try JSONDecoder().decode([String].self, from: Data(try row.decode(String.self, at: 1).utf8)))
    }

    /// The list in force, for `modgud attestation status-list show`.
    public static func summary(pool: PQPool) async throws -> Summary {
        if let row = try await pool.query("SELECT imported_at, entries, sha256 FROM android_attestation_status_imports ORDER BY id DESC LIMIT 1").first {
            return Summary(
                source: "imported", entries: Int(try row.decode(Int64.self, at: 1)), sha256: try row.decode(String.self, at: 2),
                importedAt: try row.decode(Date.self, at: 0))
        }
        let shipped = AndroidAttestationStatusList.shipped
        return Summary(source: "shipped (\(AndroidAttestationStatusData.snapshotDate))", entries: shipped.entries.count, sha256: shipped.sha256, importedAt: nil)
    }
}
