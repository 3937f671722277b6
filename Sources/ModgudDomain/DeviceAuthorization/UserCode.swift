/// The user code of a device authorization (RFC 8628 section 6.1): eight characters from
/// twenty consonants ("BCDFGHJKLMNPQRSTVWXZ": no vowels, so no words; no digits that read as
/// letters), shown as `XXXX-XXXX`. 20^8 ≈ 2^34.6 codes: with entry limited per source and per
/// realm (`device.user-code`) and ten minutes of life, guessing one live code is out of reach
/// at the documented rate (docs/guides/device-grant.md). Typed entry is case-insensitive and
/// ignores dashes and spaces (section 6.1: "the authorization server should be
/// case-insensitive … and strip … punctuation").
public struct UserCode: Sendable, Hashable, CustomStringConvertible {
    public static let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
    public static let length = 8

    /// The eight characters, without the dash.
    public let characters: String

    /// A code from random bytes (the caller's CSPRNG; one byte per character, rejection-sampled
    /// so that each consonant is equally likely). Nil when the bytes ran out before eight
    /// characters were drawn: call again with more.
    public init?(randomBytes: some Sequence<UInt8>) {
        var drawn: [Character] = []
        // 240 = 12 × 20: bytes at or above it are dropped, so `byte % 20` is uniform.
        for byte in randomBytes where byte < 240 {
            drawn.append(Self.alphabet[Int(byte % 20)])
            if drawn.count == Self.length { break }
        }
        guard drawn.count == Self.length else { return nil }
        characters = String(drawn)
    }

    /// What a person typed, normalised; nil when it cannot be a user code (so it is refused
    /// before any lookup).
    public init?(typed: String) {
        let kept = typed.uppercased().filter { $0 != "-" && $0 != " " }
        guard kept.count == Self.length, kept.allSatisfy(Self.alphabet.contains) else { return nil }
        characters = kept
    }

    /// `XXXX-XXXX`, as shown to the person.
    public var description: String {
        String(characters.prefix(4)) + "-" + String(characters.suffix(4))
    }
}
