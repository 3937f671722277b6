/// An OAuth error as RFC 6749 section 5.2 defines it: a code and a description. The HTTP layer
/// writes it as `{ "error", "error_description" }` and chooses the status.
public struct OAuthError: Error, Hashable, Sendable, CustomStringConvertible {
    public var error: String
    public var description: String
    /// For `invalid_client`: whether the client tried to authenticate (RFC 6749 section 5.2:
    /// 401 then, with a `WWW-Authenticate` challenge).
    public var authenticationAttempted: Bool
    /// A passkey assertion by a credential this server does not know (issue 46): what the app
    /// tells the device with WebAuthn's `signalUnknownCredential` (or the platform's).
    public var unknownCredential: UnknownCredential?
    /// A refused ID token exchange that an email code can complete (issue 48): the sealed
    /// session the app sends with the code (`FederationLinkSessions`), and its lifetime.
    public var linkSession: (session: String, expiresIn: Int64)? {
        get { linkSessionValue.map { ($0.session, $0.expiresIn) } }
        set { linkSessionValue = newValue.map { LinkSession(session: $0.session, expiresIn: $0.expiresIn) } }
    }
    private var linkSessionValue: LinkSession?

    private struct LinkSession: Hashable, Sendable {
        var session: String
        var expiresIn: Int64
    }

    /// A credential id (base64url) and the RP-ID it was asserted for.
    public struct UnknownCredential: Hashable, Sendable {
        public var credentialID: String
        public var rpID: String

        public init(credentialID: String, rpID: String) {
            self.credentialID = credentialID
            self.rpID = rpID
        }
    }

    public init(_ error: String, _ description: String, authenticationAttempted: Bool = false) {
        self.error = error
        self.description = description
        self.authenticationAttempted = authenticationAttempted
    }

    /// `invalid_grant` for an assertion by a credential that is not (or no longer) enrolled
    /// here: the same for a deleted passkey and one that never was, for every caller. The text
    /// is every passkey refusal's (the seed's "don't parse it"); the members tell it apart.
    public static func unknownCredential(_ credentialID: String, rpID: String, description: String) -> OAuthError {
        var error = OAuthError("invalid_grant", description)
        error.unknownCredential = UnknownCredential(credentialID: credentialID, rpID: rpID)
        return error
    }

    /// The codes control flow turns on (RFC 6749 section 5.2, and RFC 8707's): compared as
    /// values, never as text (issue 68, `ArchitectureFitnessTests`).
    public enum Code: String, Sendable {
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case invalidScope = "invalid_scope"
        case invalidTarget = "invalid_target"
    }

    /// The error's code when it is one of `Code`'s.
    public var code: Code? { Code(rawValue: error) }

    public static func invalidRequest(_ description: String) -> OAuthError { OAuthError("invalid_request", description) }
    public static func invalidGrant(_ description: String) -> OAuthError { OAuthError("invalid_grant", description) }
    public static func invalidScope(_ description: String) -> OAuthError { OAuthError("invalid_scope", description) }
    public static func invalidTarget(_ description: String) -> OAuthError { OAuthError("invalid_target", description) }
    public static func unauthorizedClient(_ description: String) -> OAuthError { OAuthError("unauthorized_client", description) }
    public static func unsupportedGrantType(_ description: String) -> OAuthError { OAuthError("unsupported_grant_type", description) }
    public static func unsupportedResponseType(_ description: String) -> OAuthError { OAuthError("unsupported_response_type", description) }

    /// Unknown client, or a failed secret (docs/spec.md section 0).
    public static func invalidClient(attempted: Bool) -> OAuthError {
        OAuthError("invalid_client", "Client authentication failed.", authenticationAttempted: attempted)
    }
}
