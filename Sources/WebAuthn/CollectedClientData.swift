import Foundation

/// The client data the browser or platform collected (WebAuthn section 5.8.1).
public struct CollectedClientData: Sendable, Decodable {
    /// `webauthn.create` or `webauthn.get`.
    public let type: String
    /// The challenge, base64url.
    public let challenge: String
    /// The caller's origin: `https://…` or `android:apk-key-hash:…`.
    public let origin: String
    public let crossOrigin: Bool?
    public let topOrigin: String?

    /// Parses clientDataJSON.
    /// - Throws: `WebAuthnError.malformedClientData`.
    public init(json bytes: [UInt8]) throws(WebAuthnError) {
        do {
            self = try JSONDecoder().decode(CollectedClientData.self, from: Data(bytes))
        } catch {
            throw .malformedClientData
        }
    }
}
