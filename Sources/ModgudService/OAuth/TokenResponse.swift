import Foundation
import ModgudDomain

/// A successful token response (RFC 6749 section 5.1; OIDC Core section 3.1.3.3).
public struct TokenResponse: Sendable, Equatable {
    public var accessToken: String
    public var tokenType = "Bearer"
    public var expiresIn: Int
    /// Only when `offline_access` was granted and the client holds `refresh_token`.
    public var refreshToken: String?
    public var scope: String
    /// Only with scope `openid`.
    public var idToken: String?
    /// The sign-in a user grant began (not sent to the client): its person and token family,
    /// for what records it (a first-party authorization code, issue 45).
    public var signIn: SignIn?
    /// draft-ietf-oauth-first-party-apps section 6.1: an `auth_session` for a later step-up,
    /// in the answer to an Authorization Challenge code only.
    public var authSession: String?
    /// Issue 46: the sign-in was by email code or link, and the person has no passkey under the
    /// client's RP-ID: the app may offer an automatic upgrade (`mediation=conditional`).
    public var passkeyUpgrade: Bool?
    /// RFC 8693 section 2.2.1: in the answer to a token exchange, the type of `access_token`.
    public var issuedTokenType: String?
    /// Native SSO (draft 07 section 3.3; issue 69): the device secret of the device session a
    /// sign-in with the `device_sso` scope started. Never stored: its hash is.
    public var deviceSecret: String?
    /// The grant created the user in its own transaction (not sent to the client): such a user
    /// holds no passkey yet, so `passkeyUpgrade` needs no lookup.
    public var userIsNew = false

    public struct SignIn: Sendable, Equatable, Codable {
        public var userID: UUID
        public var familyID: UUID
    }
}

/// What introspection reports (RFC 7662 section 2.2); inactive tokens report only `active: false`.
public struct Introspection: Sendable, Equatable {
    public var active: Bool
    public var scope: String?
    public var clientID: String?
    public var subject: String?
    public var audiences: [String]?
    public var expiresAt: Int?
    public var tokenType: String?
    /// RFC 9449 section 6.2: the thumbprint of the key a DPoP-bound token is bound to (`cnf.jkt`).
    public var dpopKey: String?
    /// The sign-in (token family) the token belongs to: the `session` a Shared Signals
    /// session-revoked SET names (OpenID Connect's `sid`), for user tokens only.
    public var sessionID: String?
    /// A user token's sign-in: `auth_time` (Unix seconds), `acr` and `amr` (issue 46; RFC 9470
    /// section 6 lists them for introspection).
    public var authTime: Int?
    public var acr: String?
    public var amr: [String]?
    /// The attested app instance the token went to (issue 47).
    public var clientAttestation: ClientAttestationFact?

    public static let inactive = Introspection(active: false)

    public init(
        active: Bool, scope: String? = nil, clientID: String? = nil, subject: String? = nil, audiences: [String]? = nil,
        expiresAt: Int? = nil, tokenType: String? = nil, dpopKey: String? = nil, sessionID: String? = nil
    ) {
        self.sessionID = sessionID
        self.dpopKey = dpopKey
        self.active = active
        self.scope = scope
        self.clientID = clientID
        self.subject = subject
        self.audiences = audiences
        self.expiresAt = expiresAt
        self.tokenType = tokenType
    }
}
