/// Inclusion and consistency proofs of RFC 9162 (sections 2.1.3 and 2.1.4), in two steps: a
/// plan names the leaf ranges whose hashes a proof lists, the store fetches the perfect
/// subtrees that make them up (`TreeNode.pieces`) in one query, and `hashes` assembles them.
public enum MerkleProofs {
    /// The ranges of an inclusion proof of `leaf` in a tree of `size` leaves, in proof order
    /// (RFC 9162 section 2.1.3.1, `PATH(m, D[n])`).
    public static func inclusionRanges(leaf: Int64, size: Int64) -> [Range<Int64>] {
        precondition(0 <= leaf && leaf < size, "the leaf must be in the tree")
        return path(leaf - 0, 0..<size)
    }

    private static func path(_ m: Int64, _ range: Range<Int64>) -> [Range<Int64>] {
        let n = Int64(range.count)
        guard n > 1 else { return [] }
        let k = largestPowerOfTwo(below: n)
        let split = range.lowerBound + k
        if m < k {
            return path(m, range.lowerBound..<split) + [split..<range.upperBound]
        }
        return path(m - k, split..<range.upperBound) + [range.lowerBound..<split]
    }

    /// The ranges of a consistency proof between trees of `first` and `second` leaves, in
    /// proof order (RFC 9162 section 2.1.4.1, `PROOF(m, D[n])`).
    public static func consistencyRanges(first: Int64, second: Int64) -> [Range<Int64>] {
        precondition(0 < first && first <= second, "consistency needs 0 < first <= second")
        return subproof(first, 0..<second, true)
    }

    private static func subproof(_ m: Int64, _ range: Range<Int64>, _ complete: Bool) -> [Range<Int64>] {
        let n = Int64(range.count)
        if m == n { return complete ? [] : [range] }
        let k = largestPowerOfTwo(below: n)
        let split = range.lowerBound + k
        if m <= k {
            return subproof(m, range.lowerBound..<split, complete) + [split..<range.upperBound]
        }
        return subproof(m - k, split..<range.upperBound, false) + [range.lowerBound..<split]
    }

    /// The perfect subtrees whose hashes the ranges need.
    public static func nodes(for ranges: [Range<Int64>]) -> Set<TreeNode> {
        Set(ranges.flatMap { TreeNode.pieces(of: $0) })
    }

    /// The hash of each range from the hashes of its perfect subtrees.
    /// - Throws: `MerkleProofError.missingNode` when the store lacked one.
    public static func hashes(of ranges: [Range<Int64>], nodes: [TreeNode: [UInt8]]) throws(MerkleProofError) -> [[UInt8]] {
        try ranges.map { range throws(MerkleProofError) in
            let pieces = TreeNode.pieces(of: range)
            var hashes: [[UInt8]] = []
            for piece in pieces {
                guard let hash = nodes[piece] else { throw .missingNode(piece) }
                hashes.append(hash)
            }
            var hash = hashes.removeLast()
            for piece in hashes.reversed() { hash = MerkleHash.node(piece, hash) }
            return hash
        }
    }

    /// The largest power of two strictly below `n` (n > 1): RFC 9162's `k`.
    static func largestPowerOfTwo(below n: Int64) -> Int64 {
        Int64(1) << Int64(63 - (n - 1).leadingZeroBitCount)
    }
}

/// A proof could not be assembled or does not verify.
public enum MerkleProofError: Error, Equatable, Sendable {
    /// The store had no hash for a perfect subtree the proof needs.
    case missingNode(TreeNode)
    /// The proof has the wrong number of hashes, or the sizes make no sense.
    case malformed
    /// The proof leads to another root.
    case rootMismatch
}
