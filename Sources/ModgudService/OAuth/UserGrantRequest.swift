import EventSourcing

/// What a user grant's token request carries besides its proof, whichever grant it is (a
/// code, a link, a passkey): the client, the scopes and resources asked for, the TOTP code,
/// the issuer, the event metadata and the DPoP key. The email and passkey services redeem
/// with it alike (issue 42: the passkey path no longer borrows the email service's type).
public struct UserGrantRequest: Sendable {
    public var client: AuthenticatedClient
    public var scope: String?
    public var resources: [String]
    public var totpCode: String?
    public var issuer: String
    public var metadata: EventMetadata
    /// The thumbprint of the request's verified DPoP proof key (RFC 9449), if any.
    public var dpopKey: String?
    /// `acr_values` (issue 46, RFC 9470 section 4): a sign-in weaker than these is refused
    /// before its proof is spent.
    public var acrValues: [String]
    /// OpenID Connect Core section 3.1.2.1 `nonce`: the ID token carries it (section 3.1.3.6).
    /// Set by the Authorization Challenge Endpoint from its first request (issue 69).
    public var nonce: String?
    /// The request's rate-limit count and DPoP jti claim, which the service's first read of the
    /// proof carries (a grant that counts itself, issue 49); `.none` when the token endpoint
    /// sent them already. Only the service spends them (issue 68).
    public internal(set) var checks: GrantChecks

    public init(
        client: AuthenticatedClient, scope: String?, resources: [String], totpCode: String?, issuer: String, metadata: EventMetadata,
        dpopKey: String? = nil, acrValues: [String] = [], checks: GrantChecks = .none
    ) {
        self.checks = checks
        self.acrValues = acrValues
        self.dpopKey = dpopKey
        self.client = client
        self.scope = scope
        self.resources = resources
        self.totpCode = totpCode
        self.issuer = issuer
        self.metadata = metadata
    }
}
