/// An OAuth error as RFC 6749 section 5.2 defines it; the HTTP layer writes it as
/// `{ "error", "error_description" }` with `Cache-Control: no-store`.
public struct OAuthError: Error, Hashable, Sendable, CustomStringConvertible {
    public var error: String
    public var description: String
    /// 400, or 401 for `invalid_client` after a failed authentication attempt.
    public var status: Int

    public init(_ error: String, _ description: String, status: Int = 400) {
        self.error = error
        self.description = description
        self.status = status
    }

    public static func invalidRequest(_ description: String) -> OAuthError { OAuthError("invalid_request", description) }
    public static func invalidGrant(_ description: String) -> OAuthError { OAuthError("invalid_grant", description) }
    public static func invalidScope(_ description: String) -> OAuthError { OAuthError("invalid_scope", description) }
    public static func invalidTarget(_ description: String) -> OAuthError { OAuthError("invalid_target", description) }
    public static func unauthorizedClient(_ description: String) -> OAuthError { OAuthError("unauthorized_client", description) }
    public static func unsupportedGrantType(_ description: String) -> OAuthError { OAuthError("unsupported_grant_type", description) }

    /// Unknown client, or a failed secret: 401 when authentication was attempted (docs/spec.md section 0).
    public static func invalidClient(attempted: Bool) -> OAuthError {
        OAuthError("invalid_client", "Client authentication failed.", status: attempted ? 401 : 400)
    }
}
