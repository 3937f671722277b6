/// Base64url (RFC 4648 section 5) as WebAuthn clients send it.
///
/// Decoding is lenient in the ways real clients differ and strict everywhere else: `=`
/// padding is accepted (some Android and older libraries send it), as is the standard
/// alphabet's `+` and `/`; any other character, a lone trailing symbol, or non-zero
/// leftover bits are rejected.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Unpadded base64url.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = input.count - index
        if rest == 1 {
            let value = UInt32(input[index]) << 16
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
        } else if rest == 2 {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url (or standard base64), padded or not; nil when malformed.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var symbols: [UInt8] = []
        symbols.reserveCapacity(text.utf8.count)
        var padding = 0
        for character in text.utf8 {
            if character == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, let value = value(of: character) else { return nil }
            symbols.append(value)
        }
        guard padding <= 2, symbols.count % 4 != 1 else { return nil }
        if padding > 0 && (symbols.count + padding) % 4 != 0 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(symbols.count * 3 / 4)
        var index = 0
        while index + 4 <= symbols.count {
            let value = UInt32(symbols[index]) << 18 | UInt32(symbols[index + 1]) << 12 | UInt32(symbols[index + 2]) << 6
                | UInt32(symbols[index + 3])
            out.append(UInt8(value >> 16 & 0xff))
            out.append(UInt8(value >> 8 & 0xff))
            out.append(UInt8(value & 0xff))
            index += 4
        }
        let rest = symbols.count - index
        if rest == 2 {
            let value = UInt32(symbols[index]) << 18 | UInt32(symbols[index + 1]) << 12
            guard value & 0xffff == 0 else { return nil }
            out.append(UInt8(value >> 16 & 0xff))
        } else if rest == 3 {
            let value = UInt32(symbols[index]) << 18 | UInt32(symbols[index + 1]) << 12 | UInt32(symbols[index + 2]) << 6
            guard value & 0xff == 0 else { return nil }
            out.append(UInt8(value >> 16 & 0xff))
            out.append(UInt8(value >> 8 & 0xff))
        }
        return out
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"), UInt8(ascii: "+"): return 62
        case UInt8(ascii: "_"), UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
