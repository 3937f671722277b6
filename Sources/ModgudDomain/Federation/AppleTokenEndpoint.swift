import Foundation

/// What Modgud needs to redeem a Sign in with Apple authorization code at Apple's token
/// endpoint (issue 48; Apple's "Generate and validate tokens"): the team, the Sign in with Apple
/// key's id, the `client_id` the code was issued to (the app's bundle id), and the key itself,
/// sealed with the master key (AES-GCM, bound to the realm and provider). The client secret is
/// an ES256 JWT this key signs for each redemption (`iss` the team, `sub` the client id, `aud`
/// `https://appleid.apple.com`, five minutes).
public struct AppleTokenEndpoint: Codable, Hashable, Sendable {
    /// The Apple Developer team id (10 characters).
    public var teamID: String
    /// The Sign in with Apple key's id (10 characters), the client secret's `kid`.
    public var keyID: String
    /// The `client_id` at Apple: one of the provider's audiences.
    public var clientID: String
    /// Apple's token endpoint (overridable for tests).
    public var tokenURL: String
    /// The .p8 key's PKCS#8 DER, sealed with the master key (base64). Never shown.
    public var sealedKey: String
    /// The key's public half (PEM), shown so an operator can tell which key is set.
    public var publicKey: String

    public static let appleTokenURL = "https://appleid.apple.com/auth/token"

    public init(teamID: String, keyID: String, clientID: String, tokenURL: String = appleTokenURL, sealedKey: String, publicKey: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.clientID = clientID
        self.tokenURL = tokenURL
        self.sealedKey = sealedKey
        self.publicKey = publicKey
    }

    func validate(audiences: [String]) throws(DomainError) {
        let isID = { (text: String) in text.count == 10 && text.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) } }
        guard isID(teamID), isID(keyID) else {
            throw DomainError("Federation.InvalidAppleIds", "TeamId and KeyId are Apple's 10-character ids (A-Z, 0-9).")
        }
        guard audiences.contains(clientID) else {
            throw DomainError("Federation.InvalidAppleClientId", "ClientId must be one of the provider's Audiences (the app's bundle id).")
        }
        guard FederatedProvider.isSecureURL(tokenURL) else {
            throw DomainError("Federation.InvalidURL", "\(tokenURL) must be an https URL (http only for localhost).")
        }
    }
}
