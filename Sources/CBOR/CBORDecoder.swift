/// A strict CBOR decoder for CTAP2 canonical data (attestation objects, COSE keys, extensions).
///
/// Hostile input is the normal case here: lengths are checked against what remains before
/// anything is allocated, nesting and item counts are capped, indefinite lengths and tags
/// are refused, duplicate map keys are refused, and `decode` refuses bytes after the item.
/// Every failure is a `CBORError`; nothing traps.
public struct CBORDecoder: Sendable {
    /// Deepest nesting of arrays and maps accepted.
    public var maxDepth: Int
    /// Most data items accepted in one input.
    public var maxItems: Int

    public init(maxDepth: Int = 16, maxItems: Int = 4096) {
        self.maxDepth = maxDepth
        self.maxItems = maxItems
    }

    /// Decodes exactly one item that spans all of `bytes`.
    /// - Throws: `CBORError.trailingBytes` when bytes follow the item.
    public func decode(_ bytes: some Collection<UInt8>) throws(CBORError) -> CBOR {
        let input = Array(bytes)
        let (item, consumed) = try decodePrefix(input)
        guard consumed == input.count else { throw .trailingBytes(count: input.count - consumed) }
        return item
    }

    /// Decodes the item at the start of `bytes` and reports how many bytes it used
    /// (for a COSE key followed by extensions inside authenticator data).
    public func decodePrefix(_ bytes: [UInt8]) throws(CBORError) -> (item: CBOR, consumed: Int) {
        var reader = Reader(bytes: bytes, maxDepth: maxDepth, maxItems: maxItems)
        let item = try reader.item(depth: 0)
        return (item, reader.offset)
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        let maxItems: Int
        var offset = 0
        var items = 0

        init(bytes: [UInt8], maxDepth: Int, maxItems: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
            self.maxItems = maxItems
        }

        var remaining: Int { bytes.count - offset }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated(offset: offset) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) throws(CBORError) -> ArraySlice<UInt8> {
            guard count <= remaining else { throw .truncated(offset: offset) }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }

        /// The argument of an item head (RFC 8949 section 3).
        mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
            switch info {
            case 0...23: return UInt64(info)
            case 24: return UInt64(try byte())
            case 25, 26, 27:
                let width = 1 << Int(info - 24)
                var value: UInt64 = 0
                for byte in try take(width) { value = value << 8 | UInt64(byte) }
                return value
            case 31: throw .indefiniteLength(offset: start)
            default: throw .reservedAdditionalInfo(offset: start)
            }
        }

        /// A length that must fit in what remains (each element needs at least `unit` bytes).
        func length(_ value: UInt64, unit: Int, at start: Int) throws(CBORError) -> Int {
            guard value <= UInt64(remaining / unit) else { throw .lengthTooLarge(offset: start) }
            return Int(value)
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            items += 1
            guard items <= maxItems else { throw .tooManyItems(limit: maxItems) }
            let start = offset
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1f
            switch major {
            case 0:
                return .unsigned(try argument(info, at: start))
            case 1:
                return .negative(try argument(info, at: start))
            case 2:
                let count = try length(try argument(info, at: start), unit: 1, at: start)
                return .bytes(Array(try take(count)))
            case 3:
                let count = try length(try argument(info, at: start), unit: 1, at: start)
                let raw = try take(count)
                guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(offset: start) }
                return .text(text)
            case 4:
                guard depth < maxDepth else { throw .depthExceeded(limit: maxDepth) }
                let count = try length(try argument(info, at: start), unit: 1, at: start)
                var elements: [CBOR] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
                return .array(elements)
            case 5:
                guard depth < maxDepth else { throw .depthExceeded(limit: maxDepth) }
                let count = try length(try argument(info, at: start), unit: 2, at: start)
                var entries: [CBORMapEntry] = []
                entries.reserveCapacity(count)
                var seen = Set<CBOR>()
                for _ in 0..<count {
                    let keyOffset = offset
                    let key = try item(depth: depth + 1)
                    guard seen.insert(key).inserted else { throw .duplicateMapKey(offset: keyOffset) }
                    entries.append(CBORMapEntry(key, try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6:
                throw .tagNotAllowed(offset: start)
            default:
                return try simple(info, at: start)
            }
        }

        mutating func simple(_ info: UInt8, at start: Int) throws(CBORError) -> CBOR {
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 24:
                let value = try byte()
                throw .unsupportedSimpleValue(offset: start, value: value)
            case 25:
                let bits = UInt16(try argument(25, at: start))
                return .float(Double(Float16Bits.decode(bits)))
            case 26:
                return .float(Double(Float(bitPattern: UInt32(try argument(26, at: start)))))
            case 27:
                return .float(Double(bitPattern: try argument(27, at: start)))
            case 31:
                throw .indefiniteLength(offset: start)
            case 28, 29, 30:
                throw .reservedAdditionalInfo(offset: start)
            default:
                throw .unsupportedSimpleValue(offset: start, value: info)
            }
        }
    }
}

/// IEEE 754 half precision, decoded by hand (Float16 is unavailable on some platforms).
enum Float16Bits {
    static func decode(_ bits: UInt16) -> Float {
        let sign: Float = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1f)
        let fraction = Float(bits & 0x3ff)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
