import Crypto
import ModgudDomain

/// Email one-time codes: 6 decimal digits, uniform (no modulo bias), stored as an HMAC with
/// a server pepper so a database leak does not reveal live codes (docs/spec.md section 2).
public struct OneTimeCode: Sendable {
    private let pepper: SymmetricKey

    public init(pepper: [UInt8]) {
        self.pepper = SymmetricKey(data: pepper)
    }

    /// A uniform code in 000000–999999: 32-bit draws at or above the largest multiple of
    /// 1,000,000 are rejected and redrawn, so every code is equally likely.
    public static func generate<R: RandomNumberGenerator>(using generator: inout R) -> String {
        let range: UInt32 = 1_000_000
        let limit = UInt32.max - UInt32.max % range  // largest multiple of the range
        var draw = generator.next() as UInt32
        while draw >= limit { draw = generator.next() as UInt32 }
        let value = String(draw % range)
        return String(repeating: "0", count: 6 - value.count) + value
    }

    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }

    /// The stored form of a code for one address: HMAC-SHA256(pepper, address || code).
    public func hash(_ code: String, for address: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(address)\u{0}\(code)".utf8), using: pepper)
        return Base64URLText.encode(Array(mac))
    }
}
