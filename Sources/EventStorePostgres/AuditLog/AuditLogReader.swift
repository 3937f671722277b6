import EventSourcing
import PQ
import TransparencyLog

/// Reads the audit log for its clients: the latest checkpoint, inclusion proofs and
/// consistency proofs in RFC 9162's shapes (sections 2.1.3 and 2.1.4), from the stored
/// perfect subtrees, each proof in one query.
public struct AuditLogReader: Sendable {
    let pool: PQPool

    public init(pool: PQPool) {
        self.pool = pool
    }

    /// A signed checkpoint as stored.
    public struct StoredCheckpoint: Sendable, Equatable {
        public var size: Int64
        /// The C2SP signed note.
        public var note: String
    }

    /// Where one event is in its realm's log.
    public struct Leaf: Sendable, Equatable {
        public var realm: String
        public var index: Int64
        public var hash: [UInt8]
    }

    public func latestCheckpoint(realm: String) async throws -> StoredCheckpoint? {
        try await pool.query(AuditLogSQL.latestCheckpoint(realm)).first.map {
            StoredCheckpoint(size: try $0.decode(Int64.self, at: 0), note: try $0.decode(String.self, at: 1))
        }
    }

    /// Every checkpoint of the realm, oldest first.
    public func checkpoints(realm: String) async throws -> [StoredCheckpoint] {
        try await pool.query(AuditLogSQL.checkpoints(realm)).rows.map {
            StoredCheckpoint(size: try $0.decode(Int64.self, at: 0), note: try $0.decode(String.self, at: 1))
        }
    }

    /// The realm's tree size as integrated so far.
    public func size(realm: String) async throws -> Int64 {
        try await pool.query(AuditLogSQL.head(realm)).first?.decode(Int64.self, at: 0) ?? 0
    }

    /// Events committed and not yet integrated: the integrator's lag.
    public func lag() async throws -> Int {
        let cursor = try await pool.query(EventStoreSQL.checkpoint(AuditLogSQL.cursorName)).first.map(LogCursor.init(checkpointRow:)) ?? .start
        return try await pool.query(EventStoreSQL.lag(after: cursor)).first?.decode(Int.self, at: 0) ?? 0
    }

    /// The log position of the realm's leaf `index`, if integrated (leaves follow log order, so
    /// every event of the realm at or before it is in a tree of `index + 1` leaves).
    public func position(realm: String, index: Int64) async throws -> Int64? {
        try await pool.query(AuditLogSQL.position(realm: realm, index: index)).first?.decode(Int64.self, at: 0)
    }

    /// The leaf made of the event at `position`, if integrated.
    public func leaf(position: Int64) async throws -> Leaf? {
        try await pool.query(AuditLogSQL.leaf(position: position)).first.map {
            Leaf(realm: try $0.decode(String.self, at: 0), index: try $0.decode(Int64.self, at: 1), hash: try $0.decode(PQBytes.self, at: 2).bytes)
        }
    }

    /// The root of the realm's tree at `size` leaves.
    public func root(realm: String, size: Int64) async throws -> [UInt8] {
        try Self.tree(realm: realm, size: size, stored: await nodes(realm: realm, CompactRange.pieces(forSize: size))).root
    }

    /// The tree of `size` leaves from the stored hashes of its right edge
    /// (`CompactRange.pieces(forSize:)`).
    static func tree(realm: String, size: Int64, stored: [TreeNode: [UInt8]]) throws -> CompactRange {
        CompactRange(size: size, hashes: try CompactRange.pieces(forSize: size).map { piece in
            guard let hash = stored[piece] else { throw AuditLogError.missingNode(realm: realm, piece) }
            return hash
        })
    }

    /// The audit path of leaf `index` in the tree of `size` leaves (RFC 9162 section 2.1.3.1).
    public func inclusionProof(realm: String, index: Int64, size: Int64) async throws -> [[UInt8]] {
        try await proof(realm: realm, ranges: MerkleProofs.inclusionRanges(leaf: index, size: size))
    }

    /// The consistency proof from `first` to `second` leaves (RFC 9162 section 2.1.4.1).
    public func consistencyProof(realm: String, first: Int64, second: Int64) async throws -> [[UInt8]] {
        try await proof(realm: realm, ranges: MerkleProofs.consistencyRanges(first: first, second: second))
    }

    private func proof(realm: String, ranges: [Range<Int64>]) async throws -> [[UInt8]] {
        let stored = try await nodes(realm: realm, Array(MerkleProofs.nodes(for: ranges)))
        do {
            return try MerkleProofs.hashes(of: ranges, nodes: stored)
        } catch .missingNode(let node) {
            throw AuditLogError.missingNode(realm: realm, node)
        }
    }

    func nodes(realm: String, _ nodes: [TreeNode]) async throws -> [TreeNode: [UInt8]] {
        try Self.hashes(await pool.query(AuditLogSQL.nodes(realm: realm, nodes)))
    }

    /// The hashes of an `AuditLogSQL.nodes` answer.
    static func hashes(_ result: PQResult) throws -> [TreeNode: [UInt8]] {
        var hashes: [TreeNode: [UInt8]] = [:]
        for row in result.rows {
            hashes[TreeNode(level: Int(try row.decode(Int64.self, at: 0)), index: try row.decode(Int64.self, at: 1))] = try row.decode(PQBytes.self, at: 2).bytes
        }
        return hashes
    }
}
