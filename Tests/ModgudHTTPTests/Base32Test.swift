import Foundation

/// Base32 decoding for the test's authenticator app (RFC 4648 section 6).
enum Base32Test {
    static func decode(_ text: String) -> [UInt8]? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var buffer = 0
        var bits = 0
        var out: [UInt8] = []
        for character in text where character != "=" {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = buffer << 5 | value
            bits += 5
            if bits >= 8 {
                out.append(UInt8(buffer >> (bits - 8) & 0xff))
                bits -= 8
            }
        }
        return out
    }
}
