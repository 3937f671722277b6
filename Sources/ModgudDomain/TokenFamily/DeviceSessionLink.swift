import Foundation

/// A sign-in's place in a device session (OpenID Connect Native SSO for Mobile Apps, draft 07;
/// issue 69). The device session is the sign-in that issued the device secret: its token
/// family's id is the session's id, the `sid` of every ID token in it, and that family's
/// revocation (sign-out with the device secret, refresh token reuse, an operator, a changed
/// security stamp) ends the session. A family a token exchange started joins it: it names the
/// same session, and signing out on the device revokes it too.
public struct DeviceSessionLink: Codable, Hashable, Sendable {
    /// The token family that issued the device secret.
    public var sessionID: UUID
    /// SHA-256 of the device secret, base64url: the lookup key of the exchange, and the ID
    /// tokens' `ds_hash` (section 3.2). The secret itself is never stored.
    public var secretHash: String
    /// The Native SSO team (`RealmSettings.nativeSSOTeams`) whose apps share the session.
    public var team: String
    /// The RFC 7638 thumbprint of the DPoP key the session is bound to (the key the first
    /// app signed in with): an exchange must prove it. Absent: the secret alone.
    public var dpopKey: String?

    public init(sessionID: UUID, secretHash: String, team: String, dpopKey: String? = nil) {
        self.sessionID = sessionID
        self.secretHash = secretHash
        self.team = team
        self.dpopKey = dpopKey
    }
}
