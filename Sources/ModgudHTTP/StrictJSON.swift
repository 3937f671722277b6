import Foundation

/// Decodes admin API bodies strictly: malformed JSON and unknown members are refused with a
/// named problem, never silently ignored.
enum StrictJSON {
    enum Failure: Error, Equatable {
        case malformed
        case unknownMember(String)
        case invalid(String)
        /// A string holds U+0000, which PostgreSQL cannot store in text or jsonb.
        case nulCharacter
    }

    /// - Parameter ignoringCase: match member names to `allowed` regardless of case, as the
    ///   seed's ASP.NET binder does (`{"email": …}` binds `Email`); a member given twice in two
    ///   spellings is refused, an unknown one still is.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], allowed: Set<String>?, ignoringCase: Bool = false) throws(Failure) -> T {
        do {
            try JSONSyntax.check(bytes)
        } catch .duplicateMember(let name) {
            throw .invalid("\(name) is given twice.")
        } catch {
            throw .malformed
        }
        var data = Data(bytes)
        guard var members = try? JSONDecoder().decode([String: AnyJSONValue].self, from: data) else { throw .malformed }
        if members.contains(where: { $0.key.unicodeScalars.contains("\u{0}") || $0.value.containsNUL }) { throw .nulCharacter }
        if let allowed, ignoringCase, !members.keys.allSatisfy(allowed.contains) {
            members = try canonicalNames(members, allowed: allowed)
            guard let renamed = try? JSONEncoder().encode(members) else { throw .malformed }
            data = renamed
        }
        if let allowed, let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) { throw .unknownMember(unknown) }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw .invalid("\(key.stringValue) is required.")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw .invalid("\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type.")
        } catch {
            throw .malformed
        }
    }

    /// The members renamed to their spelling in `allowed`, matched without regard to case;
    /// names that match nothing are kept as they are (and refused as unknown by the caller).
    static func canonicalNames(_ members: [String: AnyJSONValue], allowed: Set<String>) throws(Failure) -> [String: AnyJSONValue] {
        let spellings = Dictionary(allowed.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var renamed: [String: AnyJSONValue] = [:]
        for (name, value) in members.sorted(by: { $0.key < $1.key }) {
            let canonical = spellings[name.lowercased()] ?? name
            guard renamed[canonical] == nil else { throw .invalid("\(canonical) is given twice.") }
            renamed[canonical] = value
        }
        return renamed
    }

    /// Any JSON value, kept (to hand a nested document on as bytes).
    indirect enum AnyJSONValue: Codable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([AnyJSONValue])
        case object([String: AnyJSONValue])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([AnyJSONValue].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: AnyJSONValue].self))
            }
        }

        /// Whether any string (or member name) inside holds U+0000.
        var containsNUL: Bool {
            switch self {
            case .null, .bool, .number: return false
            case .string(let value): return value.unicodeScalars.contains("\u{0}")
            case .array(let values): return values.contains { $0.containsNUL }
            case .object(let members): return members.contains { $0.key.unicodeScalars.contains("\u{0}") || $0.value.containsNUL }
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .array(let value): try container.encode(value)
            case .object(let value): try container.encode(value)
            }
        }
    }
}
