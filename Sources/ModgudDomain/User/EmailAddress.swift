/// An email address in the one form the realm compares: trimmed and lower-cased.
public struct EmailAddress: Codable, Hashable, Sendable, CustomStringConvertible {
    public let value: String

    /// Normalizes and checks the shape (local@domain, no spaces, at most 254 characters).
    public init?(_ raw: String) {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard trimmed.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."), !trimmed.contains(where: { $0.isWhitespace || $0.isNewline })
        else { return nil }
        value = trimmed
    }

    public var description: String { value }
}
