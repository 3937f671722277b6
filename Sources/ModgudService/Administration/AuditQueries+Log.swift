import EventStorePostgres
import Foundation
import ModgudDomain
import TransparencyLog

/// The audit log's answers for auditors (issue 28; docs/operations/audit-log.md): the latest
/// signed checkpoint with the key that verifies it, and RFC 9162 proofs.
extension AuditQueries {
    /// The latest checkpoint and how to verify it.
    public struct SignedCheckpoint: Sendable, Equatable {
        /// The C2SP signed note.
        public var note: String
        public var checkpoint: Checkpoint
        /// `<name>+<key ID>+<base64(0x01 || key)>`: the note verifier key.
        public var verifierKey: String
        public var publicKey: [UInt8]
    }

    /// The realm's latest signed checkpoint, or nil before its first.
    public func checkpoint(realm: String) async throws -> SignedCheckpoint? {
        return try await ServiceRefusal.translating {
            guard let stored = try await AuditLogReader(pool: pool).latestCheckpoint(realm: realm),
                let key = try await auditKeys.publicKey(realm: realm)
            else { return nil }
            let checkpoint = try Checkpoint(body: SignedNote.open(stored.note, name: key.origin, publicKey: key.publicKey))
            return SignedCheckpoint(
                note: stored.note, checkpoint: checkpoint, verifierKey: SignedNote.verifierKey(name: key.origin, publicKey: key.publicKey),
                publicKey: key.publicKey)
        }
    }

    /// The realm's note name and Ed25519 public key, nil before its first checkpoint was signed.
    public func signingKey(realm: String) async throws -> (origin: String, publicKey: [UInt8])? {
        try await ServiceRefusal.translating {
            try await auditKeys.publicKey(realm: realm)
        }
    }

    /// What the realm's latest signed checkpoint covers: its size, when it was signed, and the
    /// log position of its last leaf (events of the realm at or before it are in it). Nil
    /// before the first checkpoint.
    public func coverage(realm: String) async throws -> (size: Int64, signedAt: Date, lastPosition: Int64)? {
        return try await ServiceRefusal.translating {
            guard let latest = try await checkpoint(realm: realm), latest.checkpoint.size > 0,
                let position = try await AuditLogReader(pool: pool).position(realm: realm, index: latest.checkpoint.size - 1)
            else { return nil }
            return (latest.checkpoint.size, Date(timeIntervalSince1970: TimeInterval(latest.checkpoint.timestamp)), position)
        }
    }

    /// An inclusion proof of the event at `position` in the realm's tree of `size` leaves
    /// (default: the latest checkpoint's size).
    public func inclusionProof(realm: String, position: Int64, size: Int64?) async throws
        -> (leafIndex: Int64, size: Int64, leafHash: [UInt8], path: [[UInt8]])
    {
        return try await ServiceRefusal.translating {
            let reader = AuditLogReader(pool: pool)
            guard let leaf = try await reader.leaf(position: position), leaf.realm == realm else {
                throw DomainError.notFound("AuditLog.NotFound", "No event of this realm at position \(position) is in the log yet.")
            }
            let size = try await checkedSize(size, realm: realm, reader: reader)
            guard leaf.index < size else {
                throw DomainError("AuditLog.SizeOutOfRange", "The event is leaf \(leaf.index); a tree of \(size) leaves does not hold it.")
            }
            return (leaf.index, size, leaf.hash, try await reader.inclusionProof(realm: realm, index: leaf.index, size: size))
        }
    }

    /// A consistency proof between the realm's trees of `first` and `second` leaves.
    public func consistencyProof(realm: String, first: Int64, second: Int64) async throws -> [[UInt8]] {
        return try await ServiceRefusal.translating {
            let reader = AuditLogReader(pool: pool)
            let second = try await checkedSize(second, realm: realm, reader: reader)
            guard first > 0, first <= second else {
                throw DomainError("AuditLog.SizeOutOfRange", "from must be at least 1 and at most to.")
            }
            return try await reader.consistencyProof(realm: realm, first: first, second: second)
        }
    }

    private func checkedSize(_ size: Int64?, realm: String, reader: AuditLogReader) async throws -> Int64 {
        let integrated = try await reader.size(realm: realm)
        guard let size else {
            guard let latest = try await reader.latestCheckpoint(realm: realm) else {
                throw DomainError.notFound("AuditLog.NotFound", "The realm's log has no checkpoint yet.")
            }
            return latest.size
        }
        guard size >= 1, size <= integrated else {
            throw DomainError("AuditLog.SizeOutOfRange", "The realm's log has \(integrated) leaves.")
        }
        return size
    }
}
