import Foundation

/// An `application/x-www-form-urlencoded` body (RFC 6749 appendix B).
///
/// OAuth parameters "MUST NOT be included more than once" (RFC 6749 section 3.2): every
/// parameter is single-valued except the ones named repeatable (`resource`, RFC 8707).
struct FormBody {
    private var values: [String: [String]] = [:]

    static let repeatable: Set<String> = ["resource"]

    /// Parses the body.
    /// - Throws: `FormError` for bad percent-encoding, invalid UTF-8, a NUL character or a repeated parameter.
    init(_ bytes: [UInt8]) throws(FormError) {
        guard !bytes.isEmpty else { return }
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0])
            let value = parts.count > 1 ? try Self.decode(parts[1]) : ""
            if values[name] != nil && !Self.repeatable.contains(name) { throw .repeated(name) }
            values[name, default: []].append(value)
        }
    }

    /// Parameters already parsed (a JSON token request, see `RequestParsing.tokenParameters`).
    init(values: [String: [String]]) {
        self.values = values
    }

    /// The single value of a parameter; empty values count as absent (RFC 6749 section 3.1).
    subscript(_ name: String) -> String? {
        guard let value = values[name]?.first, !value.isEmpty else { return nil }
        return value
    }

    /// The form with a parameter the request left out (the challenge endpoint's `client_id`
    /// named by its `auth_session`).
    func adding(_ name: String, _ value: String) -> FormBody {
        var copy = self
        copy.values[name] = [value]
        return copy
    }

    /// Every value of a repeatable parameter.
    func all(_ name: String) -> [String] {
        (values[name] ?? []).filter { !$0.isEmpty }
    }

    private static func decode(_ raw: ArraySlice<UInt8>) throws(FormError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < raw.endIndex, let high = hex(raw[index + 1]), let low = hex(raw[index + 2]) else { throw .malformed }
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .malformed }
        // PostgreSQL cannot store U+0000 in text or jsonb; no OAuth parameter needs it.
        guard !out.contains(0) else { throw .nulCharacter }
        return text
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

enum FormError: Error, Equatable {
    case malformed
    case repeated(String)
    case nulCharacter
}
