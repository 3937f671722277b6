/// What an operator operation did to an event row that is a leaf of the audit log: it
/// removed the row (retention pruning) or rewrote it (the legacy sealing rewrite, a stream
/// rename), which then hashes to `newHash`. The leaf keeps the original hash, so the tree and
/// its checkpoints stay as they were; `modgud audit verify` accepts the row's absence or new
/// hash only against such a record (docs/operations/audit-log.md, "Rewrites").
public struct AuditRedaction: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case removed
        case rewritten
    }

    public var position: Int64
    public var realm: String
    public var kind: Kind
    /// The rewritten row's leaf hash (`rewritten` only).
    public var newHash: [UInt8]?

    public init(position: Int64, realm: String, kind: Kind, newHash: [UInt8]? = nil) {
        self.position = position
        self.realm = realm
        self.kind = kind
        self.newHash = newHash
    }

    /// The type of the event that records each such operation in the realm's own log.
    public static let eventType = "AuditLogRedacted"
}
