/// A CBOR data item (RFC 8949) of the subset WebAuthn and CTAP2 use.
///
/// Maps keep their entries in the order they were read (or built); `CBOREncoder` sorts
/// them canonically when writing.
public indirect enum CBOR: Hashable, Sendable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a UTF-8 text string.
    case text(String)
    /// Major type 4: an array.
    case array([CBOR])
    /// Major type 5: a map, in entry order.
    case map([CBORMapEntry])
    /// Major type 7: false / true.
    case bool(Bool)
    /// Major type 7: null.
    case null
    /// Major type 7: undefined.
    case undefined
    /// Major type 7: a half, single or double precision float.
    case float(Double)

    /// An integer as a CBOR item (unsigned or negative).
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The integer value, if this is an integer that fits in `Int64`.
    public var intValue: Int64? {
        switch self {
        case .unsigned(let value): return value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let value): return value <= UInt64(Int64.max) ? -1 - Int64(value) : nil
        default: return nil
        }
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    public var arrayValue: [CBOR]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var mapValue: [CBORMapEntry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    /// The value for `key` if this is a map.
    public subscript(key: CBOR) -> CBOR? {
        mapValue?.first { $0.key == key }?.value
    }

    /// The value for a text key if this is a map.
    public subscript(text key: String) -> CBOR? {
        self[.text(key)]
    }

    /// The value for an integer key if this is a map (COSE keys use them).
    public subscript(int key: Int64) -> CBOR? {
        self[.int(key)]
    }
}

/// One key/value pair of a CBOR map.
public struct CBORMapEntry: Hashable, Sendable {
    public var key: CBOR
    public var value: CBOR

    public init(_ key: CBOR, _ value: CBOR) {
        self.key = key
        self.value = value
    }
}
