import EventSourcing
import Foundation

/// A refresh token grant's request (RFC 6749 section 6), as `TokenService.refresh` takes it:
/// the token, the narrowing asked for, and the request's context.
public struct RefreshRequest: Sendable {
    public var client: AuthenticatedClient
    public var refreshToken: String
    /// `scope`: narrows the granted scopes (RFC 6749 section 6).
    public var scope: String?
    /// `resource` (RFC 8707) or Auth0's `audience`: narrows or, by the client's refresh
    /// policy, switches the audience.
    public var resources: [String]
    public var issuer: String
    public var metadata: EventMetadata
    /// The request's verified DPoP key (RFC 9449). A bound family refreshes only with its own
    /// key; another key, or none, is refused before anything is spent, so a stolen token
    /// without its key cannot revoke the session either.
    public var dpopKey: String?
    /// RFC 9470 / OpenID Connect `max_age`: a sign-in older than this many seconds is refused
    /// before anything is spent (a refresh never makes a sign-in fresher).
    public var maxAge: TimeInterval?
    /// `acr_values` (RFC 9470 section 4): a refresh never makes a sign-in stronger either.
    public var acrValues: [String]
    /// The request's rate-limit count and DPoP jti claim, sent with the token's lookup (one
    /// round trip; a replayed proof throws `DPoPError.replayed` before anything is read).
    let checks: GrantChecks

    public init(
        client: AuthenticatedClient, refreshToken: String, scope: String? = nil, resources: [String] = [], issuer: String, metadata: EventMetadata,
        dpopKey: String? = nil, maxAge: TimeInterval? = nil, acrValues: [String] = [], checks: GrantChecks = .none
    ) {
        self.client = client
        self.refreshToken = refreshToken
        self.scope = scope
        self.resources = resources
        self.issuer = issuer
        self.metadata = metadata
        self.dpopKey = dpopKey
        self.maxAge = maxAge
        self.acrValues = acrValues
        self.checks = checks
    }
}
