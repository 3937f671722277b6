#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EventSourcing
import PQ

/// Records what an operator operation did to event rows, in the transaction that does it: one
/// `audit_redactions` row per event, and per realm one `AuditLogRedacted` event in a stream of
/// its own (`auditlog-<uuid>`), which becomes a leaf like every event. The tree then shows
/// that data was removed or rewritten, by which operation and when; the leaves of the
/// changed rows keep their original hashes (docs/operations/audit-log.md, "Rewrites").
enum AuditRedactionRecorder {
    /// The stream type of the operation records.
    static let streamType = "auditlog"

    /// - Parameter operation: what did it (`retention`, `seal-legacy`, `rename-stream`).
    static func record(_ redactions: [AuditRedaction], operation: String, actor: String, on connection: isolated PQConnection) throws {
        guard !redactions.isEmpty else { return }
        var statements: [PQQuery] = []
        let metadata = EventMetadata(actor: actor).json
        for realm in Set(redactions.map(\.realm)).sorted() {
            let mine = redactions.filter { $0.realm == realm }
            let stream = StreamRef(type: streamType, key: UUID().uuidString.lowercased(), realm: realm)
            let removed = mine.filter { $0.kind == .removed }.count
            let payload = #"{"operation":"\#(operation)","removed":\#(removed),"rewritten":\#(mine.count - removed)}"#
            statements.append(AuditLogSQL.redact(mine, operation: stream.id))
            statements.append(
                EventStoreSQL.append(
                    stream: stream, expected: .noStream, types: [AuditRedaction.eventType], revisions: [1], payloads: [PQJSON(payload)],
                    metadata: metadata))
        }
        _ = try connection.pipeline(statements)
    }
}
