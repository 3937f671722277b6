import Foundation
import ModgudDomain

/// Which provider holds a passkey ("Google Password Manager", "1Password", a security key
/// model), from the AAGUID in its attested credential data (WebAuthn L3 section 6.5.1), using
/// the community list shipped in the binary (`PasskeyProviderData`; never fetched at run time).
/// A zero AAGUID (the authenticator did not say, as Apple's platform passkeys do) and unknown
/// ones are a generic "Passkey".
public enum PasskeyProviders {
    /// What lists and admin views show.
    public struct Provider: Sendable, Equatable {
        public var name: String
        /// `data:image/svg+xml;base64,…` icons, when the list has them.
        public var iconLight: String?
        public var iconDark: String?
        /// The AAGUID as a UUID (nil when zero or missing).
        public var aaguid: String?
    }

    public static let generic = Provider(name: "Passkey", iconLight: nil, iconDark: nil, aaguid: nil)

    private struct Entry: Decodable {
        var name: String
        var icon_light: String?
        var icon_dark: String?
    }

    private static let catalog: [String: Entry] =
        (try? JSONDecoder().decode([String: Entry].self, from: Data(PasskeyProviderData.json.utf8))) ?? [:]

    /// How many providers the shipped list names.
    public static var count: Int { catalog.count }

    /// The provider of a passkey whose AAGUID is stored as base64url (as `passkey.enrolled` records it).
    public static func provider(aaguid stored: String?) -> Provider {
        guard let uuid = guid(aaguid: stored) else { return generic }
        guard let entry = catalog[uuid] else { return Provider(name: generic.name, iconLight: nil, iconDark: nil, aaguid: uuid) }
        return Provider(name: entry.name, iconLight: entry.icon_light, iconDark: entry.icon_dark, aaguid: uuid)
    }

    /// A stored (base64url) AAGUID as a lowercase GUID; nil for none, a malformed one, and the
    /// all-zero AAGUID of authenticators that name no model.
    public static func guid(aaguid stored: String?) -> String? {
        guard let stored, let bytes = Base64URLText.decode(stored), bytes.count == 16, bytes.contains(where: { $0 != 0 }) else { return nil }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
            bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])).uuidString.lowercased()
    }
}
