import Crypto
import TransparencyLog
import XCTest

/// The tree against RFC 6962's reference vectors (the inputs and roots of Certificate
/// Transparency's own tests), and every proof of small trees checked by the RFC 9162
/// verification algorithms.
final class MerkleTreeTests: XCTestCase {
    static let inputs: [[UInt8]] = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
        .map(hex)
    static let roots = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ]

    func testRootsOfTheReferenceVectors() {
        XCTAssertEqual(CompactRange().root, MerkleHash.emptyTree)
        XCTAssertEqual(Self.hexString(MerkleHash.emptyTree), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var tree = CompactRange()
        for (index, input) in Self.inputs.enumerated() {
            tree.append(leafHash: MerkleHash.leaf(input))
            XCTAssertEqual(Self.hexString(tree.root), Self.roots[index], "root of \(index + 1) leaves")
        }
    }

    /// A store of every perfect subtree of `count` leaves, as the integrator writes it.
    static func store(leaves count: Int) -> (nodes: [TreeNode: [UInt8]], roots: [[UInt8]], leaves: [[UInt8]]) {
        var nodes: [TreeNode: [UInt8]] = [:]
        var roots: [[UInt8]] = []
        var leaves: [[UInt8]] = []
        var tree = CompactRange()
        for index in 0..<count {
            let leaf = MerkleHash.leaf(Array("leaf \(index)".utf8))
            leaves.append(leaf)
            nodes[TreeNode(level: 0, index: Int64(index))] = leaf
            for completed in tree.append(leafHash: leaf) { nodes[completed.node] = completed.hash }
            roots.append(tree.root)
        }
        return (nodes, roots, leaves)
    }

    func testEveryInclusionProofOfSmallTreesVerifies() throws {
        let (nodes, roots, leaves) = Self.store(leaves: 40)
        for size in 1...40 {
            for leaf in 0..<size {
                let ranges = MerkleProofs.inclusionRanges(leaf: Int64(leaf), size: Int64(size))
                let path = try MerkleProofs.hashes(of: ranges, nodes: nodes)
                try MerkleVerification.verifyInclusion(leafHash: leaves[leaf], index: Int64(leaf), size: Int64(size), path: path, root: roots[size - 1])
                // Another leaf's hash, or another tree's root, fails.
                XCTAssertThrowsError(
                    try MerkleVerification.verifyInclusion(
                        leafHash: leaves[(leaf + 1) % 40], index: Int64(leaf), size: Int64(size), path: path, root: roots[size - 1]))
                if size > 1 {
                    XCTAssertThrowsError(
                        try MerkleVerification.verifyInclusion(leafHash: leaves[leaf], index: Int64(leaf), size: Int64(size), path: path, root: roots[size - 2]))
                }
            }
        }
    }

    func testEveryConsistencyProofOfSmallTreesVerifies() throws {
        let (nodes, roots, _) = Self.store(leaves: 40)
        for second in 1...40 {
            for first in 1...second {
                let ranges = MerkleProofs.consistencyRanges(first: Int64(first), second: Int64(second))
                let path = try MerkleProofs.hashes(of: ranges, nodes: nodes)
                try MerkleVerification.verifyConsistency(
                    first: Int64(first), second: Int64(second), firstRoot: roots[first - 1], secondRoot: roots[second - 1], path: path)
                if first < second {
                    // A forked history: the first tree's root differs.
                    XCTAssertThrowsError(
                        try MerkleVerification.verifyConsistency(
                            first: Int64(first), second: Int64(second), firstRoot: MerkleHash.leaf([9]), secondRoot: roots[second - 1], path: path))
                }
            }
        }
    }

    /// RFC 9162's proof lengths for the 7-leaf example tree of section 2.1.5.
    func testProofShapesOfTheRFCExample() {
        XCTAssertEqual(MerkleProofs.inclusionRanges(leaf: 0, size: 7), [1..<2, 2..<4, 4..<7], "a: [b, h, l]")
        XCTAssertEqual(MerkleProofs.inclusionRanges(leaf: 3, size: 7), [2..<3, 0..<2, 4..<7], "d: [c, g, l]")
        XCTAssertEqual(MerkleProofs.inclusionRanges(leaf: 4, size: 7), [5..<6, 6..<7, 0..<4], "e: [f, j, k]")
        XCTAssertEqual(MerkleProofs.inclusionRanges(leaf: 6, size: 7), [4..<6, 0..<4], "j: [i, k]")
        XCTAssertEqual(MerkleProofs.consistencyRanges(first: 3, second: 7), [2..<3, 3..<4, 0..<2, 4..<7], "hash0: [c, d, g, l]")
        XCTAssertEqual(MerkleProofs.consistencyRanges(first: 4, second: 7), [4..<7], "hash1: [l]")
        XCTAssertEqual(MerkleProofs.consistencyRanges(first: 6, second: 7), [4..<6, 6..<7, 0..<4], "hash2: [i, j, k]")
    }

    func testACompactRangeRebuiltFromStoredPiecesContinues() {
        let (nodes, roots, leaves) = Self.store(leaves: 23)
        let size: Int64 = 13
        var tree = CompactRange(size: size, hashes: CompactRange.pieces(forSize: size).map { nodes[$0]! })
        XCTAssertEqual(tree.root, roots[12])
        for index in 13..<23 { tree.append(leafHash: leaves[index]) }
        XCTAssertEqual(tree.root, roots[22])
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    static func hexString(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
