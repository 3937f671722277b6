/// A piece of personal data (an address, a name) as an event or a read model carries it.
///
/// New events carry it sealed under the subject's key (`SealedText`; issue 13). Events written
/// before sealing began carry it plain until `modgud privacy seal-legacy` rewrites them, so
/// both decode. Encoded as one JSON string either way.
public enum PersonalText: Codable, Hashable, Sendable, CustomStringConvertible {
    case sealed(SealedText)
    /// Legacy: written before personal data was sealed.
    case plain(String)

    /// The text as stored: the sealed form, or the legacy plaintext.
    public var stored: String {
        switch self {
        case .sealed(let sealed): sealed.stored
        case .plain(let text): text
        }
    }

    /// Parses a stored text: sealed when it has the sealed form, plain otherwise.
    public init(stored: String) {
        self = SealedText(stored: stored).map(PersonalText.sealed) ?? .plain(stored)
    }

    /// The sealed text, or nil for legacy plaintext.
    public var sealed: SealedText? {
        if case .sealed(let sealed) = self { sealed } else { nil }
    }

    /// Never the plaintext (logs and debug output).
    public var description: String {
        switch self {
        case .sealed(let sealed): sealed.description
        case .plain: "[personal data]"
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(stored: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stored)
    }
}
