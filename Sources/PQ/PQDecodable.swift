#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Swift type that can be decoded from a column's text representation.
public protocol PQDecodable: Sendable {
    /// Decodes a non-NULL value from the server's text format.
    static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Self?
    /// Decodes SQL NULL; only optionals accept it.
    static func decodeNull() -> Self?
}

extension PQDecodable {
    public static func decodeNull() -> Self? { nil }
}

extension String: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> String? {
        String(decoding: pqText, as: UTF8.self)
    }
}

extension Int64: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Int64? {
        PQIntegerText.parse(pqText)
    }
}

extension Int: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Int? {
        PQIntegerText.parse(pqText).flatMap { Int(exactly: $0) }
    }
}

extension Int32: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Int32? {
        PQIntegerText.parse(pqText).flatMap { Int32(exactly: $0) }
    }
}

extension Double: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Double? {
        Double(String(decoding: pqText, as: UTF8.self))
    }
}

extension Bool: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard pqText.count == 1 else { return nil }
        switch pqText[0] {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: return nil
        }
    }
}

extension UUID: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> UUID? {
        UUID(uuidString: String(decoding: pqText, as: UTF8.self))
    }
}

extension Date: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Date? {
        PQTimestamp.parse(pqText)
    }
}

extension PQBytes: PQDecodable {
    /// `bytea` in the server's default hex output (`\x0a1b…`).
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> PQBytes? {
        guard pqText.count >= 2, pqText[0] == UInt8(ascii: "\\"), pqText[1] == UInt8(ascii: "x") else { return nil }
        return PQHex.decode(pqText[2...]).map(PQBytes.init)
    }
}

extension PQJSON: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> PQJSON? {
        PQJSON(bytes: Array(pqText))
    }
}

extension PQTransactionID: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> PQTransactionID? {
        UInt64(String(decoding: pqText, as: UTF8.self)).map(PQTransactionID.init)
    }
}

extension Optional: PQDecodable where Wrapped: PQDecodable {
    public static func decode(pqText: UnsafeBufferPointer<UInt8>) -> Wrapped?? {
        Wrapped.decode(pqText: pqText).map { .some($0) }
    }
    public static func decodeNull() -> Wrapped?? { .some(nil) }
}

/// Decimal integer parsing without allocating a String.
enum PQIntegerText {
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !text.isEmpty else { return nil }
        var index = 0
        var negative = false
        if text[0] == UInt8(ascii: "-") {
            negative = true
            index = 1
            guard text.count > 1 else { return nil }
        }
        var value: Int64 = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !o1, !o2 else { return nil }
            value = next
            index += 1
        }
        return value
    }
}
