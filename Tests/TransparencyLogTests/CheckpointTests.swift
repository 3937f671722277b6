import Crypto
import TransparencyLog
import XCTest

/// C2SP checkpoints in signed notes: round trip, and every way a note can fail to verify.
final class CheckpointTests: XCTestCase {
    func testASignedCheckpointOpensWithItsKeyOnly() throws {
        let key = Curve25519.Signing.PrivateKey()
        let name = "audit.modgud/acme"
        let checkpoint = Checkpoint(origin: name, size: 42, root: MerkleHash.leaf([1]), timestamp: 1_800_000_000)
        let note = try SignedNote.sign(checkpoint.body, name: name, key: key)
        XCTAssertTrue(note.hasPrefix("audit.modgud/acme\n42\n"))
        XCTAssertTrue(note.contains("\n\n\u{2014} audit.modgud/acme "), "the signature line follows a blank line")
        let text = try SignedNote.open(note, name: name, publicKey: Array(key.publicKey.rawRepresentation))
        XCTAssertEqual(try Checkpoint(body: text), checkpoint)

        let other = Curve25519.Signing.PrivateKey()
        XCTAssertThrowsError(try SignedNote.open(note, name: name, publicKey: Array(other.publicKey.rawRepresentation))) {
            XCTAssertEqual($0 as? CheckpointError, .unsigned(key: name), "another key has another key ID")
        }
        let forged = note.replacingOccurrences(of: "\n42\n", with: "\n41\n")
        XCTAssertThrowsError(try SignedNote.open(forged, name: name, publicKey: Array(key.publicKey.rawRepresentation))) {
            XCTAssertEqual($0 as? CheckpointError, .badSignature)
        }
    }

    /// A key whose base64 holds a "+", the separator of the key's other parts: readers split
    /// at the first two only.
    func testTheVerifierKeyNamesTheKeyAsNoteVerifiersRead() throws {
        let fill = try XCTUnwrap((0...255).map(UInt8.init).first { Data([0x01] + [UInt8](repeating: $0, count: 32)).base64EncodedString().contains("+") })
        let publicKey = [UInt8](repeating: fill, count: 32)
        let verifier = SignedNote.verifierKey(name: "example.com/log", publicKey: publicKey)
        let parts = verifier.split(separator: "+", maxSplits: 2)
        XCTAssertEqual(parts.count, 3)
        XCTAssertTrue(parts[2].contains("+"))
        XCTAssertEqual(parts[0], "example.com/log")
        let digest = Array(SHA256.hash(data: Array("example.com/log\n".utf8) + [0x01] + publicKey).prefix(4))
        XCTAssertEqual(String(parts[1]), digest.map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(Data(base64Encoded: String(parts[2])), Data([0x01] + publicKey))
    }

    func testMalformedBodiesAreRefused() {
        for body in ["", "origin\n", "origin\nx\nAAAA\nTimestamp: 1\n", "origin\n1\nnot base64\nTimestamp: 1\n", "origin\n1\n\(Data(MerkleHash.emptyTree).base64EncodedString())\n"] {
            XCTAssertThrowsError(try Checkpoint(body: body), body)
        }
    }
}
