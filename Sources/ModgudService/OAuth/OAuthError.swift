/// An OAuth error as RFC 6749 section 5.2 defines it: a code and a description. The HTTP layer
/// writes it as `{ "error", "error_description" }` and chooses the status.
public struct OAuthError: Error, Hashable, Sendable, CustomStringConvertible {
    public var error: String
    public var description: String
    /// For `invalid_client`: whether the client tried to authenticate (RFC 6749 section 5.2:
    /// 401 then, with a `WWW-Authenticate` challenge).
    public var authenticationAttempted: Bool

    public init(_ error: String, _ description: String, authenticationAttempted: Bool = false) {
        self.error = error
        self.description = description
        self.authenticationAttempted = authenticationAttempted
    }

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
