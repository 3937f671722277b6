/// Why an ID token exchange was refused (issue 48). Each is answered `invalid_grant` with the
/// reason in the description (RFC 8693 section 2.2.2 lets the server say why; the reason names
/// the check, never the account), except `keysUnavailable`, the provider's outage (`temporarily_unavailable`).
public enum FederationError: Error, Equatable, Sendable {
    /// The token failed a check; the reason code says which.
    case refused(reason: String, detail: String)
    /// An account has the token's address and the provider's `Linking` asks for an email code:
    /// the reason `link_requires_email_code`, with a link session the code completes.
    case linkNeedsEmailCode(session: String, expiresIn: Int64, detail: String)
    /// The provider's keys could not be fetched.
    case keysUnavailable(String)
}
