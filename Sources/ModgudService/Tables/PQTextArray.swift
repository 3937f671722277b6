import PQ

/// Parses PostgreSQL's text form of a one-dimensional text[] (`{a,"b c"}`).
enum PQTextArray {
    static func decode(_ text: String) throws -> [String] {
        var items: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        let body = text.dropFirst().dropLast()
        guard text.first == "{", text.last == "}" else { throw PQError(.decoding, message: "not an array: \(text.prefix(40))") }
        if body.isEmpty { return [] }
        for character in body {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                items.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        items.append(current)
        return items
    }
}
