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

    /// Parses the stored form; nil for anything else. It checks the shape only (base64url
    /// characters, of a length base64url can have, then a subject): every decoded event's
    /// personal fields and every append's client IP come through here, so nothing is
    /// allocated; the box is decoded when opened.
    public init?(stored: String) {
        var utf8 = stored.utf8[...]
        guard utf8.starts(with: Self.prefix.utf8) else { return nil }
        utf8 = utf8.dropFirst(Self.prefix.utf8.count)
        var length = 0
        while let byte = utf8.first, byte != UInt8(ascii: ".") {
            guard Self.isBase64URL(byte) else { return nil }
            length += 1
            utf8 = utf8.dropFirst()
        }
        // A dot, a non-empty box of a length unpadded base64url can have, a non-empty subject.
        guard utf8.count > 1, length > 0, length % 4 != 1 else { return nil }
        self.stored = stored
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
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
