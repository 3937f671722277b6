import Foundation

/// A signed-in session: what a `TokenStore` keeps. The issuer and client id travel with the
/// tokens, so a stored session can be resumed without other configuration (`modgud token`).
public struct ModgudSession: Codable, Sendable, Equatable {
    public var issuer: String
    public var clientID: String
    public var accessToken: String
    /// Every user grant issues one; rotated by each refresh.
    public var refreshToken: String?
    public var idToken: String?
    /// When the access token stops working (the server's `expires_in` from when it was received).
    public var expiresAt: Date
    public var scope: String?
    /// `DPoP` when the tokens are bound to the client's DPoP key (RFC 9449), nil for bearer tokens.
    public var tokenType: String?
    /// draft-ietf-oauth-first-party-apps section 6.1: the session a first-party sign-in ended
    /// with, for a later step-up (`FirstPartyFlow.stepUp`). Kept across refreshes.
    public var authSession: String?
    /// Issue 46: the server says an automatic passkey upgrade is possible now
    /// (`ModgudClient.upgradeToPasskey`).
    public var passkeyUpgrade: Bool?
    /// OpenID Connect Native SSO (issue 69): the device secret a sign-in with `device_sso`
    /// got, kept across refreshes. Share it with the team's apps as a `DeviceSession`
    /// (docs/guides/native-sso.md); never log it.
    public var deviceSecret: String?

    public init(
        issuer: String, clientID: String, accessToken: String, refreshToken: String?, idToken: String?, expiresAt: Date, scope: String?,
        tokenType: String? = nil
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.expiresAt = expiresAt
        self.scope = scope
        self.tokenType = tokenType
    }

    /// Whether the access token must be sent with the DPoP scheme and a proof.
    public var isDPoPBound: Bool { tokenType == "DPoP" }

    /// The ID token's claims, decoded without verifying the signature (the token came from the
    /// token endpoint over TLS, which is what OpenID Connect Core section 3.1.3.7 allows a
    /// client to rely on). Nil without an ID token.
    public var idTokenClaims: [String: JSONValue]? {
        guard let idToken, case let parts = idToken.split(separator: "."), parts.count == 3, let payload = Base64URL.decode(String(parts[1])) else {
            return nil
        }
        return JSONValue.object(from: payload)
    }

    /// The user's id (the ID token's `sub`).
    public var subject: String? { idTokenClaims?["sub"]?.string }
}

/// base64url without padding (RFC 4648 section 5), as WebAuthn and JWTs use it.
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
    }

    static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
