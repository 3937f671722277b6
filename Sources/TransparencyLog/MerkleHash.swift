import Crypto

/// The hashes of an RFC 9162 Merkle tree (section 2.1.1), with SHA-256: a leaf is hashed
/// with the prefix 0x00 and an interior node with 0x01, so no leaf can pose as a node
/// (the second-preimage defence of RFC 9162 section 2.1.1 and RFC 6962 section 2.1).
public enum MerkleHash {
    /// Bytes in every hash.
    public static let size = 32

    /// The hash of an empty tree: SHA-256 of no bytes (RFC 9162 section 2.1.1, `MTH({})`).
    public static let emptyTree: [UInt8] = Array(SHA256.hash(data: [UInt8]()))

    /// `SHA-256(0x00 || data)`: the hash of one leaf.
    public static func leaf(_ data: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: [0x00])
        hasher.update(data: data)
        return Array(hasher.finalize())
    }

    /// `SHA-256(0x01 || left || right)`: the hash of an interior node.
    public static func node(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: [0x01])
        hasher.update(data: left)
        hasher.update(data: right)
        return Array(hasher.finalize())
    }
}
