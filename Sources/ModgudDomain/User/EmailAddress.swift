/// An email address in the one form the realm compares: trimmed and lower-cased.
public struct EmailAddress: Codable, Hashable, Sendable, CustomStringConvertible {
    public let value: String

    /// Normalizes and checks the shape: `local@domain`, no white space or control characters
    /// (C0, DEL, C1: they cannot be mailed, and NUL cannot be stored), at most 254 octets in
    /// all, a local part of at most 64 octets (RFC 5321 section 4.5.3.1), a domain of dot-separated
    /// labels of 1 to 63 octets with at least two labels.
    public init?(_ raw: String) {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard trimmed.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
            !trimmed.unicodeScalars.contains(where: Self.isForbidden)
        else { return nil }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 63 }) else { return nil }
        value = trimmed
    }

    public var description: String { value }

    /// White space and control characters (U+0000–U+0020, U+007F–U+00A0) and other Unicode white space.
    private static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 0x20 || (0x7F...0xA0).contains(scalar.value) || scalar.properties.isWhitespace
    }
}
