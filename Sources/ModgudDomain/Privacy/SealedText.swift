/// A piece of personal data as stored in an event or a read model: encrypted under its
/// subject's data key (`PersonalDataVault`), so deleting that key erases every copy.
///
/// Stored form: `pd1.<AES-256-GCM nonce, ciphertext and tag, base64url>.<subject>`. The
/// subject is part of the authenticated data, so a text moved to another subject does not open.
public struct SealedText: Codable, Hashable, Sendable, CustomStringConvertible {
    public let stored: String

    static let prefix = "pd1."

    /// The stored form of an AES-256-GCM box (nonce, ciphertext, tag) sealed for `subject`.
    public init(box: [UInt8], subject: String) {
        stored = Self.prefix + Base64URLText.encode(box) + "." + subject
    }

    /// Parses the stored form; nil for anything else.
    public init?(stored: String) {
        guard stored.hasPrefix(Self.prefix) else { return nil }
        let rest = stored.dropFirst(Self.prefix.count)
        guard let dot = rest.firstIndex(of: "."), rest.index(after: dot) < rest.endIndex,
            Base64URLText.decode(String(rest[..<dot])) != nil
        else { return nil }
        self.stored = stored
    }

    /// The subject whose key seals this text (`user:<id>`, `challenge:<stream>`).
    public var subject: String {
        let rest = stored.dropFirst(Self.prefix.count)
        return String(rest[rest.index(after: rest.firstIndex(of: ".")!)...])
    }

    /// The AES-256-GCM box: nonce, ciphertext and tag.
    public var box: [UInt8] {
        let rest = stored.dropFirst(Self.prefix.count)
        return Base64URLText.decode(String(rest[..<rest.firstIndex(of: ".")!])) ?? []
    }

    /// Never the plaintext: logs and debug output show only whose data it is.
    public var description: String { "[sealed for \(subject)]" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = SealedText(stored: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a sealed text"))
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stored)
    }
}
