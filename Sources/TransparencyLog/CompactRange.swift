/// The right edge of a growing Merkle tree: the roots of the perfect subtrees that make up
/// the leaves so far (one per set bit of the size), enough to append a leaf, to learn which
/// perfect subtrees it completes, and to compute the root (RFC 9162 section 2.1.1).
///
/// The integrator keeps one per realm while it appends; `modgud audit verify` rebuilds one
/// from the stored leaves.
public struct CompactRange: Sendable, Equatable {
    /// Leaves appended.
    public private(set) var size: Int64
    /// The hashes of `TreeNode.pieces(of: 0..<size)`, left to right.
    public private(set) var hashes: [[UInt8]]

    /// An empty tree.
    public init() {
        size = 0
        hashes = []
    }

    /// A tree of `size` leaves, from the hashes of its pieces (as stored).
    /// - Precondition: one hash per piece of `0..<size`.
    public init(size: Int64, hashes: [[UInt8]]) {
        precondition(TreeNode.pieces(of: 0..<size).count == hashes.count, "one hash per perfect subtree")
        self.size = size
        self.hashes = hashes
    }

    /// The perfect subtrees whose hashes `init(size:hashes:)` needs.
    public static func pieces(forSize size: Int64) -> [TreeNode] {
        TreeNode.pieces(of: 0..<size)
    }

    /// Appends a leaf hash; returns the perfect subtrees above level 0 it completed, lowest first.
    @discardableResult
    public mutating func append(leafHash: [UInt8]) -> [(node: TreeNode, hash: [UInt8])] {
        var completed: [(node: TreeNode, hash: [UInt8])] = []
        var hash = leafHash
        var level = 0
        let index = size
        // Each trailing one bit of the old size is a piece of the same width to merge with.
        while (index >> Int64(level)) & 1 == 1 {
            hash = MerkleHash.node(hashes.removeLast(), hash)
            level += 1
            completed.append((TreeNode(level: level, index: index >> Int64(level)), hash))
        }
        hashes.append(hash)
        size += 1
        return completed
    }

    /// The tree's root hash (`MTH(D[size])`).
    public var root: [UInt8] {
        guard var hash = hashes.last else { return MerkleHash.emptyTree }
        for piece in hashes.dropLast().reversed() { hash = MerkleHash.node(piece, hash) }
        return hash
    }
}
