/// Writes CBOR in CTAP2 canonical form: shortest heads, definite lengths, map keys sorted
/// by their encoded bytes (shorter first, then bytewise; CTAP2 section 8, "canonical CBOR").
public enum CBOREncoder {
    /// The canonical encoding of `item`.
    public static func encode(_ item: CBOR) -> [UInt8] {
        var out: [UInt8] = []
        write(item, into: &out)
        return out
    }

    private static func write(_ item: CBOR, into out: inout [UInt8]) {
        switch item {
        case .unsigned(let value): head(0, value, into: &out)
        case .negative(let value): head(1, value, into: &out)
        case .bytes(let bytes):
            head(2, UInt64(bytes.count), into: &out)
            out.append(contentsOf: bytes)
        case .text(let text):
            let utf8 = Array(text.utf8)
            head(3, UInt64(utf8.count), into: &out)
            out.append(contentsOf: utf8)
        case .array(let items):
            head(4, UInt64(items.count), into: &out)
            for element in items { write(element, into: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count), into: &out)
            let encoded = entries.map { (key: encode($0.key), value: encode($0.value)) }
            let sorted = encoded.sorted { lhs, rhs in
                lhs.key.count != rhs.key.count ? lhs.key.count < rhs.key.count : lhs.key.lexicographicallyPrecedes(rhs.key)
            }
            for entry in sorted {
                out.append(contentsOf: entry.key)
                out.append(contentsOf: entry.value)
            }
        case .bool(let value): out.append(value ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        case .float(let value):
            out.append(0xfb)
            let bits = value.bitPattern
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch value {
        case 0..<24: out.append(type | UInt8(value))
        case 24..<0x100: out.append(contentsOf: [type | 24, UInt8(value)])
        case 0x100..<0x1_0000: out.append(contentsOf: [type | 25, UInt8(value >> 8), UInt8(truncatingIfNeeded: value)])
        case 0x1_0000..<0x1_0000_0000:
            out.append(type | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        default:
            out.append(type | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
    }
}
