/// A SQL statement and its bound parameters.
///
/// String interpolation binds: `"SELECT * FROM t WHERE id = \(id)"` becomes
/// `SELECT * FROM t WHERE id = $1` with `id` as parameter 1. Values are never spliced into
/// the text. Two escape hatches exist for what cannot be a parameter: `\(identifier:)`
/// quotes a table or column name, and `\(unescaped:)` inserts trusted SQL written in code.
public struct PQQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The statement text with `$1…$n` placeholders.
    public var sql: String
    /// The parameters, in placeholder order.
    public var binds: [PQBind]

    /// A statement with explicit placeholders and parameters.
    public init(_ sql: String, binds: [PQBind] = []) {
        self.sql = sql
        self.binds = binds
    }

    /// A statement with explicit placeholders and encodable parameters.
    public init(_ sql: String, _ values: any PQEncodable...) {
        self.sql = sql
        self.binds = values.map { $0.pqBind }
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    /// Builds the statement text and binds from an interpolated literal.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PQBind] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// Binds a value as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some PQEncodable) {
            binds.append(value.pqBind)
            sql += "$\(binds.count)"
        }

        /// Binds an optional value (`nil` is SQL NULL).
        public mutating func appendInterpolation<T: PQEncodable>(_ value: T?) {
            binds.append(value.pqBind)
            sql += "$\(binds.count)"
        }

        /// Inserts another statement's text and binds: its `$n` placeholders are renumbered
        /// after the binds so far. For fragments built in code (subqueries chosen by a case).
        public mutating func appendInterpolation(fragment: PQQuery) {
            let offset = binds.count
            var text = ""
            var characters = fragment.sql.makeIterator()
            var pending = characters.next()
            while let character = pending {
                pending = characters.next()
                guard character == "$", let first = pending, first.isASCII, first.isNumber else {
                    text.append(character)
                    continue
                }
                var digits = ""
                while let digit = pending, digit.isASCII, digit.isNumber {
                    digits.append(digit)
                    pending = characters.next()
                }
                text += "$\(Int(digits)! + offset)"
            }
            sql += text
            binds += fragment.binds
        }

        /// Inserts a double-quoted identifier (table, column, index name).
        public mutating func appendInterpolation(identifier: String) {
            sql += PQQuery.quoteIdentifier(identifier)
        }

        /// Inserts SQL text as written. Only for fragments that come from code, never from input.
        public mutating func appendInterpolation(unescaped: String) {
            sql += unescaped
        }
    }

    /// `"name"` with embedded double quotes doubled (SQL identifier quoting).
    public static func quoteIdentifier(_ name: String) -> String {
        var quoted = "\""
        for character in name {
            if character == "\"" { quoted += "\"\"" } else { quoted.append(character) }
        }
        quoted += "\""
        return quoted
    }
}
