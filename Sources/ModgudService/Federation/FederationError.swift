/// Why an ID token exchange was refused (issue 48). Each is answered `invalid_grant` with the
/// reason in the description (RFC 8693 section 2.2.2 lets the server say why; the reason names
/// the check, never the account), except `keysUnavailable`, the provider's outage (`temporarily_unavailable`).
public enum FederationError: Error, Equatable, Sendable {
    /// The token failed a check; the reason code says which.
    case refused(reason: String, detail: String)
    /// The provider's keys could not be fetched.
    case keysUnavailable(String)
}
