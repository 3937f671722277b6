import Crypto
import _CryptoExtras
import Foundation

/// Recovery codes (issue 46): ten per set, each 10 characters of Crockford's base32 (50 bits,
/// shown as `XXXXX-XXXXX`), stored as PBKDF2-SHA256 under the set's random salt. Pure: no I/O.
///
/// One salt per set means a redemption costs one slow hash however many codes are left (the
/// presented code's hash is then looked up). NIST SP 800-63B section 5.1.2.2: a look-up secret
/// of under 112 bits is stored under a password hashing scheme with a salt of at least 32 bits
/// (here 128, SP 800-132) and a cost factor as high as practical without hurting the verifier.
public enum RecoveryCode {
    /// How many codes a set has.
    public static let setSize = 10
    /// PBKDF2-HMAC-SHA256 iterations. A code has 50 random bits, not a password's few: a stolen
    /// table costs 2^49 guesses of 100,000 HMAC pairs per code on average (about 10^20 SHA-256
    /// blocks), while a verification costs one hash of tens of milliseconds on one core, which
    /// the token endpoint pays for every try (limited per address and per source). OWASP's
    /// 600,000 (and swift-crypto's checked minimum of 210,000) are sized for human-chosen
    /// passwords; hence the unchecked entry point (docs/decisions.md, "Recovery codes").
    public static let rounds = 100_000
    /// Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or retyped survives.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// A new set: `setSize` distinct codes in display form, and a fresh 16-byte salt.
    public static func generateSet() -> (codes: [String], salt: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        var codes: [String] = []
        while codes.count < setSize {
            // 32 symbols: each draw of 5 bits is uniform without rejection.
            let symbols = (0..<10).map { _ in alphabet[Int(generator.next() as UInt8) & 31] }
            let code = String(symbols[0..<5]) + "-" + String(symbols[5...])
            if !codes.contains(code) { codes.append(code) }
        }
        return (codes, (0..<16).map { _ in generator.next() as UInt8 })
    }

    /// The canonical form of what a person typed: case, spaces and hyphens ignored, and
    /// Crockford's look-alikes read as their digits (O as 0; I and L as 1). nil unless that
    /// leaves exactly 10 symbols of the alphabet.
    public static func normalize(_ typed: String) -> String? {
        guard typed.utf8.count <= 64 else { return nil }
        var symbols: [Character] = []
        for character in typed.uppercased() {
            switch character {
            case " ", "-": continue
            case "O": symbols.append("0")
            case "I", "L": symbols.append("1")
            default:
                guard alphabet.contains(character) else { return nil }
                symbols.append(character)
            }
        }
        return symbols.count == 10 ? String(symbols) : nil
    }

    /// The stored form of a code (normalized first): hex of PBKDF2-SHA256(code, salt, rounds).
    public static func hash(_ code: String, salt: [UInt8]) throws -> String {
        let canonical = normalize(code) ?? code
        let key = try KDF.Insecure.PBKDF2.deriveKey(from: Array(canonical.utf8), salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
    }
}
