/// Checks proofs as a client of the log does: RFC 9162 section 2.1.3.2 (inclusion) and
/// section 2.1.4.2 (consistency), step for step.
public enum MerkleVerification {
    /// Whether `leafHash` is leaf `index` of the tree of `size` leaves whose root is `root`.
    public static func verifyInclusion(leafHash: [UInt8], index: Int64, size: Int64, path: [[UInt8]], root: [UInt8]) throws(MerkleProofError) {
        // Step 1: the index must be inside the tree.
        guard index >= 0, index < size else { throw .malformed }
        // Step 2.
        var fn = index
        var sn = size - 1
        // Step 3.
        var r = leafHash
        // Step 4.
        for p in path {
            guard sn != 0 else { throw .malformed }
            if fn & 1 == 1 || fn == sn {
                r = MerkleHash.node(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = MerkleHash.node(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        // Step 5.
        guard sn == 0 else { throw .malformed }
        guard r == root else { throw .rootMismatch }
    }

    /// Whether the tree of `second` leaves with root `secondRoot` extends the tree of `first`
    /// leaves with root `firstRoot`.
    public static func verifyConsistency(
        first: Int64, second: Int64, firstRoot: [UInt8], secondRoot: [UInt8], path: [[UInt8]]
    ) throws(MerkleProofError) {
        guard 0 < first, first <= second else { throw .malformed }
        if first == second {
            guard path.isEmpty else { throw .malformed }
            guard firstRoot == secondRoot else { throw .rootMismatch }
            return
        }
        // Step 1: an empty proof cannot prove growth.
        guard !path.isEmpty else { throw .malformed }
        // Step 2: a first tree that is one perfect subtree is its own first hash.
        var path = path
        if first & (first - 1) == 0 { path.insert(firstRoot, at: 0) }
        // Step 3.
        var fn = first - 1
        var sn = second - 1
        // Step 4.
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        // Step 5.
        var fr = path[0]
        var sr = path[0]
        // Step 6.
        for c in path.dropFirst() {
            guard sn != 0 else { throw .malformed }
            if fn & 1 == 1 || fn == sn {
                fr = MerkleHash.node(c, fr)
                sr = MerkleHash.node(c, sr)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                sr = MerkleHash.node(sr, c)
            }
            fn >>= 1
            sn >>= 1
        }
        // Step 7.
        guard sn == 0 else { throw .malformed }
        guard fr == firstRoot, sr == secondRoot else { throw .rootMismatch }
    }
}
