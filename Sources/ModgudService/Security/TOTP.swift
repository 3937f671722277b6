import Crypto
import Foundation

/// Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP): HMAC-SHA1, 30-second steps,
/// 6 digits, a window of one step either side.
public struct TOTP: Sendable {
    public let secret: [UInt8]
    public let digits: Int
    public let step: TimeInterval

    public init(secret: [UInt8], digits: Int = 6, step: TimeInterval = 30) {
        self.secret = secret
        self.digits = digits
        self.step = step
    }

    /// A new 160-bit secret (RFC 4226 section 4 recommends 160 bits).
    public static func generateSecret() -> [UInt8] {
        SymmetricKey(size: SymmetricKeySize(bitCount: 160)).withUnsafeBytes { Array($0) }
    }

    /// The time step counter for an instant (RFC 6238 section 4.2: T = floor((now - T0) / X)).
    public func counter(at date: Date) -> UInt64 {
        UInt64(max(0, date.timeIntervalSince1970) / step)
    }

    /// The code for a counter (RFC 4226 section 5.3: dynamic truncation).
    public func code(counter: UInt64) -> String {
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary = UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8 | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The counter a presented code matches within ±1 step of `date`, if any. The caller must
    /// refuse a counter at or below the last one accepted (a step is accepted once).
    public func match(_ presented: String, at date: Date) -> UInt64? {
        guard presented.count == digits, presented.allSatisfy(\.isASCII), presented.allSatisfy(\.isNumber) else { return nil }
        let now = counter(at: date)
        var found: UInt64? = nil
        // Every candidate is computed and compared, so timing does not reveal which matched.
        for candidate in [now &- 1, now, now + 1] where candidate <= now + 1 {
            if ConstantTime.equal(code(counter: candidate), presented) && found == nil { found = candidate }
        }
        return found
    }

    /// `otpauth://totp/<issuer>:<account>?secret=…&issuer=…` for authenticator apps.
    public func provisioningURI(issuer: String, account: String) -> String {
        // Issuer and account are encoded apart and joined by a literal colon (Key URI format).
        let label = Self.encode(issuer) + ":" + Self.encode(account)
        return "otpauth://totp/\(label)?secret=\(Base32.encode(secret))&issuer=\(Self.encode(issuer))&algorithm=SHA1&digits=\(digits)&period=\(Int(step))"
    }

    /// Percent-encodes everything but unreserved characters and `@` (RFC 3986 section 2.3).
    private static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let character = Character(Unicode.Scalar(byte))
            if byte < 0x80 && (character.isLetter || character.isNumber || "-._~@".contains(character)) {
                out.append(character)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }
}

/// RFC 4648 base32 without padding (what authenticator apps read).
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
