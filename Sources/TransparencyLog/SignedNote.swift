import Crypto
import Foundation

/// A C2SP signed note (https://c2sp.org/signed-note) with Ed25519 keys: the text, a blank
/// line, and one line per signature, `— <key name> <base64(key ID || signature)>`.
///
/// The key ID is the first four bytes of SHA-256(name, "\n", 0x01, public key), 0x01 being
/// the Ed25519 signature type; the signature covers the text, newline included.
public enum SignedNote {
    /// The Ed25519 signature type byte.
    static let ed25519: UInt8 = 0x01
    static let dash = "\u{2014} "

    /// The 4-byte key ID of an Ed25519 key under `name`.
    public static func keyID(name: String, publicKey: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: Array(name.utf8) + [0x0A, ed25519] + publicKey).prefix(4))
    }

    /// The verifier key string `<name>+<key ID hex>+<base64(0x01 || public key)>`, the form
    /// note verifiers (Go's `golang.org/x/mod/sumdb/note`, the witnesses) read.
    public static func verifierKey(name: String, publicKey: [UInt8]) -> String {
        let id = keyID(name: name, publicKey: publicKey).map { String(format: "%02x", $0) }.joined()
        return "\(name)+\(id)+\(Data([ed25519] + publicKey).base64EncodedString())"
    }

    /// Signs `text` (newline-terminated) and returns the note.
    public static func sign(_ text: String, name: String, key: Curve25519.Signing.PrivateKey) throws -> String {
        precondition(text.hasSuffix("\n"), "a note's text ends with a newline")
        let signature = try key.signature(for: Array(text.utf8))
        let blob = keyID(name: name, publicKey: Array(key.publicKey.rawRepresentation)) + Array(signature)
        return text + "\n" + dash + name + " " + Data(blob).base64EncodedString() + "\n"
    }

    /// The text of `note` if it carries a valid signature by the named key.
    public static func open(_ note: String, name: String, publicKey: [UInt8]) throws(CheckpointError) -> String {
        guard let split = note.range(of: "\n\n", options: .backwards) else { throw .malformed("no signature block") }
        let text = String(note[..<split.lowerBound]) + "\n"
        let id = keyID(name: name, publicKey: publicKey)
        let lines = note[split.upperBound...].split(separator: "\n")
        for line in lines where line.hasPrefix(dash + name + " ") {
            guard let blob = Data(base64Encoded: String(line.dropFirst(dash.count + name.count + 1))), blob.count == 4 + 64 else { continue }
            guard Array(blob.prefix(4)) == id else { continue }
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { throw .malformed("not an Ed25519 key") }
            guard key.isValidSignature(blob.dropFirst(4), for: Array(text.utf8)) else { throw .badSignature }
            return text
        }
        throw .unsigned(key: name)
    }
}
