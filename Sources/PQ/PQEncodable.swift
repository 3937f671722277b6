#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Swift value that can be bound as a statement parameter.
public protocol PQEncodable: Sendable {
    /// The value as a bound parameter.
    var pqBind: PQBind { get }
}

extension String: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: 0, text: self) }
}

extension Substring: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: 0, text: String(self)) }
}

extension Int: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.int8, text: String(self)) }
}

extension Int64: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.int8, text: String(self)) }
}

extension Int32: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.int4, text: String(self)) }
}

extension Double: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.float8, text: String(self)) }
}

extension Bool: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.bool, text: self ? "t" : "f") }
}

extension UUID: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.uuid, text: uuidString.lowercased()) }
}

extension Date: PQEncodable {
    public var pqBind: PQBind { PQBind(oid: PQType.timestamptz, text: PQTimestamp.format(self)) }
}

/// Binary data bound as `bytea` (hex text format).
public struct PQBytes: PQEncodable, Hashable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var pqBind: PQBind { PQBind(oid: PQType.bytea, text: "\\x" + PQHex.encode(bytes)) }
}

/// A JSON document bound as `jsonb`, or decoded from a `json`/`jsonb` column, as its UTF-8 text.
public struct PQJSON: PQEncodable, Hashable {
    public var text: String
    public init(_ text: String) { self.text = text }
    public init(bytes: [UInt8]) { self.text = String(decoding: bytes, as: UTF8.self) }
    public var pqBind: PQBind { PQBind(oid: PQType.jsonb, text: text) }
}

/// A 64-bit transaction id (`xid8`), as written by `pg_current_xact_id()`.
public struct PQTransactionID: PQEncodable, Hashable, Comparable {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var pqBind: PQBind { PQBind(oid: PQType.xid8, text: String(rawValue)) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension Optional: PQEncodable where Wrapped: PQEncodable {
    public var pqBind: PQBind {
        switch self {
        case .none: return .null
        case .some(let value): return value.pqBind
        }
    }
}

extension Array: PQEncodable where Element: PQArrayElement {
    /// A one-dimensional array literal (`{"a","b"}`), every element quoted and escaped.
    ///
    /// Built as UTF-8 bytes: `"` and `\` are ASCII, so they never occur inside a multi-byte
    /// sequence, and escaping byte by byte is exact. (An event batch binds every payload
    /// through here; appending scalar by scalar to a `String` was a measurable part of an
    /// append, issue 49.)
    public var pqBind: PQBind {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (index, element) in enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard var value = element.pqBind.text else {
                bytes += "NULL".utf8
                continue
            }
            value.withUTF8 { utf8 in
                bytes.append(UInt8(ascii: "\""))
                for byte in utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                    bytes.append(byte)
                }
                bytes.append(UInt8(ascii: "\""))
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return PQBind(oid: Element.pqArrayOID, text: String(decoding: bytes, as: UTF8.self))
    }
}

/// An element type that can be bound inside a one-dimensional array.
public protocol PQArrayElement: PQEncodable {
    /// The OID of the array type (`text[]`, `bigint[]`, …).
    static var pqArrayOID: UInt32 { get }
}

extension String: PQArrayElement { public static var pqArrayOID: UInt32 { PQType.textArray } }
extension Int64: PQArrayElement { public static var pqArrayOID: UInt32 { PQType.int8Array } }
extension Int: PQArrayElement { public static var pqArrayOID: UInt32 { PQType.int8Array } }
extension Int32: PQArrayElement { public static var pqArrayOID: UInt32 { PQType.int4Array } }
extension PQJSON: PQArrayElement { public static var pqArrayOID: UInt32 { PQType.jsonbArray } }
/// A nil element is bound as `NULL` inside the array.
extension Optional: PQArrayElement where Wrapped: PQArrayElement { public static var pqArrayOID: UInt32 { Wrapped.pqArrayOID } }
