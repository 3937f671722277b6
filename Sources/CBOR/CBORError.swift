/// Why bytes are not acceptable CBOR. Every rejection of the decoder is one of these.
public enum CBORError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input ended inside an item.
    case truncated(offset: Int)
    /// Indefinite-length items (additional info 31) are not allowed (CTAP2 canonical form).
    case indefiniteLength(offset: Int)
    /// Additional info 28–30 is reserved.
    case reservedAdditionalInfo(offset: Int)
    /// Tags (major type 6) are not allowed.
    case tagNotAllowed(offset: Int)
    /// A map has the same key twice.
    case duplicateMapKey(offset: Int)
    /// Bytes remain after the top-level item.
    case trailingBytes(count: Int)
    /// Nesting deeper than the decoder's limit.
    case depthExceeded(limit: Int)
    /// More items in total than the decoder's limit.
    case tooManyItems(limit: Int)
    /// A length larger than what remains of the input (or than the limit).
    case lengthTooLarge(offset: Int)
    /// A text string that is not valid UTF-8.
    case invalidUTF8(offset: Int)
    /// A simple value other than false, true, null, undefined.
    case unsupportedSimpleValue(offset: Int, value: UInt8)

    public var description: String {
        switch self {
        case .truncated(let offset): return "CBOR input ends inside an item at byte \(offset)"
        case .indefiniteLength(let offset): return "indefinite-length CBOR item at byte \(offset)"
        case .reservedAdditionalInfo(let offset): return "reserved CBOR additional information at byte \(offset)"
        case .tagNotAllowed(let offset): return "CBOR tag at byte \(offset) is not allowed"
        case .duplicateMapKey(let offset): return "duplicate CBOR map key at byte \(offset)"
        case .trailingBytes(let count): return "\(count) byte(s) after the CBOR item"
        case .depthExceeded(let limit): return "CBOR nesting deeper than \(limit)"
        case .tooManyItems(let limit): return "more than \(limit) CBOR items"
        case .lengthTooLarge(let offset): return "CBOR length at byte \(offset) exceeds the input"
        case .invalidUTF8(let offset): return "CBOR text at byte \(offset) is not UTF-8"
        case .unsupportedSimpleValue(let offset, let value): return "unsupported CBOR simple value \(value) at byte \(offset)"
        }
    }
}
