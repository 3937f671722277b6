import EventSourcing
import ModgudDomain
import ModgudService

/// One `grant_type` the token endpoint serves (RFC 6749 section 4; an extension grant is
/// section 4.5). `TokenController` parses the request, looks the grant up in the
/// `GrantRegistry`, applies the gates every grant shares (the realm's native switch, client
/// authentication, the rate limits, the client's permission) and renders the outcome; the
/// grant reads its own parameters and redeems them. Adding a grant is adding one such type
/// and registering it.
protocol TokenGrant: Sendable {
    /// The `grant_type` value.
    var name: String { get }
    /// The grant the client must be allowed (`ClientSettings.grants`) when the endpoint checks
    /// it before redeeming; nil when the service checks it itself.
    var permission: GrantType? { get }
    /// Whether the realm's native-grant switch gates it (and discovery lists it only then).
    var isNative: Bool { get }
    /// Whether it sends the request's rate-limit count and its DPoP proof's jti claim itself
    /// (in one pipeline with its own lookup); otherwise the endpoint sends them before redeeming.
    var countsItself: Bool { get }
    /// Whether its refusals must not tell one subject from another (issue 44: the native
    /// grants, and refresh, whose revoked and unknown tokens took different paths): a refused
    /// redemption answers after the jitter, and a realm that cannot sign refuses every
    /// request alike, before anything is looked up.
    var refusesUniformly: Bool { get }
    /// Redeems the grant. Failures are `OAuthError`s (or `RateLimited`).
    func redeem(_ request: GrantRequest) async throws -> TokenResponse
}

extension TokenGrant {
    var countsItself: Bool { false }
    var refusesUniformly: Bool { isNative }
}

/// What a grant gets from the endpoint: the parameters, the authenticated client and the
/// prepared rate-limit count, and the request's context.
struct GrantRequest: Sendable {
    let form: FormBody
    let client: AuthenticatedClient
    /// The request's buckets (per source, per client) when the grant `countsItself`; nil when
    /// the endpoint counted them. Grants never send it: the service's first read carries it
    /// (`checks`), and `countRefusal` counts a request refused before that read.
    let uncounted: RateLimitCheck?
    let realm: RealmDirectory.Entry
    let issuer: String
    /// The request's source key (an address, or an IPv6 /64), for per-source limits.
    let source: String
    let correlationID: String
    let clientIP: String?
    let userAgent: String?
    /// The services a grant may call (and nothing else of the instance).
    let services: GrantServices
    /// The thumbprint of the request's verified DPoP proof key (RFC 9449): the tokens are bound to it.
    let dpopKey: String?
    /// The proof's jti claim, still to send, for a grant that `countsItself` (nil otherwise:
    /// the endpoint claimed it).
    let dpopClaim: DPoPClaim?

    /// The count and the proof's claim still to send (`.none` unless the grant `countsItself`):
    /// they ride inside the request a grant hands its service (issue 68).
    private var checks: GrantChecks { GrantChecks(rateLimit: uncounted, dpopClaim: dpopClaim) }

    /// Counts a request refused before the service's first read (a malformed one), so refusals
    /// cannot be tried without limit; throws `RateLimited` in place of the refusal when over.
    /// Nothing when the endpoint counted it already.
    func countRefusal() async throws {
        if let uncounted { try await services.rateLimiter.run(uncounted) }
    }

    /// Metadata of the events the grant appends, `actor` unset (a refresh) or the client.
    func metadata(actorIsClient: Bool) -> EventMetadata {
        EventMetadata(correlationID: correlationID, actor: actorIsClient ? "client:\(client.id)" : nil, clientIP: clientIP, userAgent: userAgent)
    }

    /// The sign-in request of a native grant (`scope`, `resource`, `totp_code`).
    var signIn: UserGrantRequest {
        signIn(scope: form["scope"], resources: form.all("resource"))
    }

    /// The sign-in request with the scope and resources a grant reads its own way (Auth0's
    /// grants); the DPoP key, the checks and the rest come from the request, so no grant can
    /// drop them.
    func signIn(scope: String?, resources: [String]) -> UserGrantRequest {
        UserGrantRequest(
            client: client, scope: scope, resources: resources, totpCode: form["totp_code"], issuer: issuer, metadata: metadata(actorIsClient: true),
            dpopKey: dpopKey, acrValues: AuthenticationContext.values(form["acr_values"]), checks: checks)
    }

    /// The refresh request of `refresh_token` (RFC 6749 section 6), with the request's DPoP
    /// key, checks and context; `actor` is unset in its events.
    func refresh(_ refreshToken: String, scope: String?, resources: [String]) -> RefreshRequest {
        RefreshRequest(
            client: client, refreshToken: refreshToken, scope: scope, resources: resources, issuer: issuer, metadata: metadata(actorIsClient: false),
            dpopKey: dpopKey, maxAge: form["max_age"].flatMap { Double($0) }, acrValues: AuthenticationContext.values(form["acr_values"]),
            checks: checks)
    }
}

/// What grants may call: the token, sign-in and passkey services and the rate limiter.
struct GrantServices: Sendable {
    let tokens: TokenService
    /// Introspection (a step-up session's sign-in, revoked or not).
    let introspection: TokenIntrospection
    /// A reused authorization code's family.
    let revocation: TokenRevocation
    let clientCredentials: ClientCredentialsService
    /// Native SSO's token exchange (issue 69).
    let nativeSSO: NativeSSOService
    let passkeys: PasskeyService
    let rateLimiter: RateLimiter
    /// Email codes and links (needs the master key; throws without it).
    let emailSignIn: @Sendable () throws -> EmailSignInService
    /// DPoP proof checks (needs the master key for its nonces; nil without it).
    let dpop: DPoPVerifier?
    /// The Authorization Challenge Endpoint's sessions and codes (issue 45).
    let firstParty: FirstPartyAuthorization
    /// Recovery codes (issue 46; needs the master key).
    let recoveryCodes: @Sendable () throws -> RecoveryCodeService
    /// ID token exchanges (issue 48; needs the master key).
    let federatedSignIn: @Sendable () throws -> FederatedSignIn
    /// Device authorizations (RFC 8628, issue 69; needs the master key).
    let deviceAuthorizations: @Sendable () throws -> DeviceAuthorizationService
}
