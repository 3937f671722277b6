import Foundation

/// How the console writes values: UTC times to the second, counts with separators.
enum ConsoleFormat {
    static func time(_ date: Date?) -> String {
        guard let date else { return "-" }
        let formatted = ISO8601DateFormatter.string(from: date, timeZone: .gmt, formatOptions: [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime])
        return formatted + " UTC"
    }

    static func count(_ value: Int) -> String {
        var digits = String(value.magnitude)
        var groups: [Substring] = []
        while digits.count > 3 {
            groups.insert(Substring(digits.suffix(3)), at: 0)
            digits.removeLast(3)
        }
        groups.insert(Substring(digits), at: 0)
        return (value < 0 ? "-" : "") + groups.joined(separator: ",")
    }

    /// `3600` → `1 h`, `90` → `90 s`.
    static func seconds(_ value: Int) -> String {
        if value >= 86_400, value % 86_400 == 0 { return "\(value / 86_400) d" }
        if value >= 3600, value % 3600 == 0 { return "\(value / 3600) h" }
        if value >= 60, value % 60 == 0 { return "\(value / 60) min" }
        return "\(value) s"
    }
}
