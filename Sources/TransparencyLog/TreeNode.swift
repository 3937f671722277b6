/// A perfect subtree of a Merkle tree: at `level` 0 a leaf, at level `l` the 2^l leaves
/// from `index << l` on. Every hash a proof needs is the root of a range of leaves, and every
/// such range is a run of perfect subtrees (RFC 9162 section 2.1.1 splits at the largest
/// power of two), so a log that stores the hash of each completed perfect subtree can answer
/// any proof for any size it has reached.
public struct TreeNode: Hashable, Sendable, Comparable {
    public var level: Int
    public var index: Int64

    public init(level: Int, index: Int64) {
        self.level = level
        self.index = index
    }

    /// The first leaf under the node.
    public var firstLeaf: Int64 { index << Int64(level) }
    /// Leaves under the node.
    public var width: Int64 { Int64(1) << Int64(level) }

    public static func < (lhs: TreeNode, rhs: TreeNode) -> Bool {
        (lhs.level, lhs.index) < (rhs.level, rhs.index)
    }

    /// The perfect subtrees that make up the leaves `start..<end`, left to right, largest
    /// first, as RFC 9162's split of a range starting at a multiple of its left part's width.
    /// The range's hash folds them from the right: `node(p1, node(p2, … pn))`.
    public static func pieces(of range: Range<Int64>) -> [TreeNode] {
        var pieces: [TreeNode] = []
        var start = range.lowerBound
        var remaining = range.count
        while remaining > 0 {
            // The largest power of two that fits the rest and is aligned at `start`.
            var level = 63 - Int64(remaining).leadingZeroBitCount
            while level > 0 && start & ((Int64(1) << Int64(level)) - 1) != 0 { level -= 1 }
            pieces.append(TreeNode(level: level, index: start >> Int64(level)))
            start += Int64(1) << Int64(level)
            remaining -= 1 << level
        }
        return pieces
    }
}
