/// RFC 8259's grammar, checked over a whole body before anything decodes it: one value and
/// nothing after it, every string valid UTF-8 with valid escapes (no lone surrogates, no raw
/// control characters), nesting bounded, and no object naming a member twice.
///
/// Foundation's decoder reads lazily: it takes the first of two members with one name and
/// never looks inside the second, so `{"Code":null,"Code":"\ud"}` decoded where any other
/// parser refuses it (found by `ops/fuzz requests`, issue 44). Section 4 leaves duplicate
/// names' meaning to each implementation, which is how a proxy and a server come to read
/// different requests: refused here, by name.
enum JSONSyntax {
    enum Violation: Error, Equatable {
        case malformed
        case duplicateMember(String)
    }

    /// Deeper documents are refused: no request body of ours nests more than a few levels.
    static let maxDepth = 64

    static func check(_ bytes: [UInt8]) throws(Violation) {
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw .malformed }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws(Violation) {
            guard peek == byte else { throw .malformed }
            index += 1
        }

        mutating func value(depth: Int) throws(Violation) {
            guard depth < JSONSyntax.maxDepth, let byte = peek else { throw .malformed }
            switch byte {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal(Array("true".utf8))
            case UInt8(ascii: "f"): try literal(Array("false".utf8))
            case UInt8(ascii: "n"): try literal(Array("null".utf8))
            default: try number()
            }
        }

        mutating func literal(_ word: [UInt8]) throws(Violation) {
            guard bytes.count - index >= word.count, Array(bytes[index..<index + word.count]) == word else { throw .malformed }
            index += word.count
        }

        /// Section 4; a name's second use is `duplicateMember`, compared as decoded text.
        mutating func object(depth: Int) throws(Violation) {
            index += 1
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return
            }
            var names = Set<String>()
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\"") else { throw .malformed }
                let name = try string()
                guard names.insert(name).inserted else { throw .duplicateMember(name) }
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                try value(depth: depth)
                skipWhitespace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return
            }
        }

        /// Section 5.
        mutating func array(depth: Int) throws(Violation) {
            index += 1
            skipWhitespace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                try value(depth: depth)
                skipWhitespace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                return
            }
        }

        /// Section 7, and section 8.1's UTF-8: the decoded text.
        mutating func string() throws(Violation) -> String {
            index += 1
            var text: [UInt8] = []
            while true {
                guard let byte = peek else { throw .malformed }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let decoded = String(validating: text, as: UTF8.self) else { throw .malformed }
                    return decoded
                case UInt8(ascii: "\\"):
                    try escape(into: &text)
                case 0x00..<0x20:
                    throw .malformed
                default:
                    text.append(byte)
                }
            }
        }

        mutating func escape(into text: inout [UInt8]) throws(Violation) {
            guard let byte = peek else { throw .malformed }
            index += 1
            let simple: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]
            if let replacement = simple[byte] {
                text.append(replacement)
                return
            }
            guard byte == UInt8(ascii: "u") else { throw .malformed }
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                try literal(Array(#"\u"#.utf8))
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw .malformed }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw .malformed }
            text.append(contentsOf: Array(String(Character(unicode)).utf8))
        }

        mutating func hex4() throws(Violation) -> UInt32 {
            guard bytes.count - index >= 4 else { throw .malformed }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = Self.hexDigit(byte) else { throw .malformed }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        static func hexDigit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        /// Section 6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() throws(Violation) {
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else {
                try digits()
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                try digits()
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                try digits()
            }
        }

        mutating func digits() throws(Violation) {
            let start = index
            while let byte = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            guard index > start else { throw .malformed }
        }
    }
}
