import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// A user's event history as operators read it.
extension AdminService {

    /// One line of a user's history.
    public struct AuditEntry: Sendable {
        public var recordedAt: Date
        public var event: String
        public var detail: String
        public var actor: String?
        public var client: String?
        public var clientIP: String?
    }

    /// A user's history from the log: their own stream and their token families, in log order.
    public func audit(realm: String, userID: UUID) async throws -> [AuditEntry] {
        let userStream = StreamNames.user(realm: realm, userID: userID).id
        let rows = try await core.pool.query(
            """
            SELECT e.recorded_at, e.type, e.payload->>'reason', e.metadata->>'actor', f.client_id, e.metadata->>'clientIP',
                   e.payload->>'grantType', e.payload->>'generation', e.payload->>'storedSignCount', e.payload->>'receivedSignCount',
                   CASE WHEN e.type = 'user.registered' THEN e.payload->>'email' END
            FROM events e
            LEFT JOIN token_families f ON e.stream_id = 'token-family-' || f.family_id::text
            WHERE e.realm = \(realm) AND (e.stream_id = \(userStream) OR f.user_id = \(userID) OR e.stream_id IN (
                -- The user's passkeys, deleted ones included (an operator command: a scan of
                -- the realm's passkey enrollments is acceptable here).
                SELECT stream_id FROM events
                WHERE realm = \(realm) AND type = 'passkey.enrolled' AND lower(payload->>'userID') = \(userID.uuidString.lowercased())))
            ORDER BY e.tx_id, e.position
            """
        ).rows
        // An erased person's data reads `[erased]`: their address in the registration, and
        // their client IPs (whose day keys outlive them: the audit does not).
        let erased = try await core.user(realm: realm, id: userID).status == .erased
        var entries: [AuditEntry] = []
        for row in rows {
            var details: [String] = []
            if let grant = try row.decode(String?.self, at: 6) { details.append("grant=\(grant)") }
            if let generation = try row.decode(String?.self, at: 7) { details.append("generation=\(generation)") }
            if let reason = try row.decode(String?.self, at: 2) { details.append("reason=\(reason)") }
            if let stored = try row.decode(String?.self, at: 8), let received = try row.decode(String?.self, at: 9) {
                details.append("sign_count stored=\(stored) received=\(received)")
            }
            if let email = try row.decode(String?.self, at: 10).map(PersonalText.init(stored:)) {
                let opened = erased ? nil : try await core.vault?.open(email)
                details.append("email=\(opened ?? (erased || core.vault != nil ? SealedFieldRenderer.erased : "[sealed]"))")
            }
            // Sealed addresses open while their day key lives (docs/operations/retention.md, "Client IPs").
            let stored = try row.decode(String?.self, at: 5)
            let address =
                erased
                ? stored.map { _ in SealedFieldRenderer.erased }
                : try await core.vault?.openAddress(stored) ?? stored.map { SealedText(stored: $0) == nil ? $0 : "[sealed]" }
            entries.append(
                AuditEntry(
                    recordedAt: try row.decode(Date.self, at: 0), event: try row.decode(String.self, at: 1),
                    detail: details.joined(separator: " "), actor: try row.decode(String?.self, at: 3),
                    client: try row.decode(String?.self, at: 4), clientIP: address))
        }
        return entries
    }
}
