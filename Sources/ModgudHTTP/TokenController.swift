import EventSourcing
import Hummingbird
import Logging
import ModgudDomain
import ModgudService

/// POST /connect/token (RFC 6749 section 3.2): parses the request, looks the grant up in the
/// `GrantRegistry`, applies the gates every grant shares, and renders the outcome. What a
/// grant redeems is its own type's business (`Grants/`).
struct TokenController: Sendable {
    let parsing: RequestParsing
    let grants: GrantRegistry
    let services: GrantServices
    let gates: TokenEndpointGates
    let rateLimiter: RateLimiter

    init(services: GrantServices, gates: TokenEndpointGates, parsing: RequestParsing, grants: GrantRegistry = .standard) {
        self.parsing = parsing
        self.grants = grants
        self.services = services
        self.gates = gates
        rateLimiter = services.rateLimiter
    }

    func token(_ request: Request, context: ModgudRequestContext) async -> Response {
        var outcome = GrantOutcome()
        let response = await respond(request, context: context, outcome: &outcome)
        outcome.record(servedBy: grants)
        return response
    }

    private func respond(_ request: Request, context: ModgudRequestContext, outcome: inout GrantOutcome) async -> Response {
        let started = ContinuousClock.now
        do {
            let tokens = try await redeem(request, context: context, outcome: &outcome, started: started)
            outcome.outcome = "success"
            var response = OAuthResponses.token(tokens)
            if tokens.tokenType == "DPoP", let dpop = services.dpop { response.headers[.dpopNonce] = dpop.currentNonce }
            return response
        } catch let refusal as DPoPError {
            // RFC 9449 section 5 (invalid_dpop_proof) and section 8 (use_dpop_nonce, with a nonce).
            var response: Response
            switch refusal {
            case .useNonce(let detail):
                outcome.outcome = "use_dpop_nonce"
                response = OAuthResponses.error(OAuthError("use_dpop_nonce", detail))
            case .invalid(let detail):
                outcome.outcome = "invalid_dpop_proof"
                response = OAuthResponses.error(OAuthError("invalid_dpop_proof", "The DPoP proof is invalid: \(detail)."))
            case .replayed:
                outcome.outcome = "invalid_dpop_proof"
                response = OAuthResponses.error(OAuthError("invalid_dpop_proof", "The DPoP proof was used before."))
            }
            if let dpop = services.dpop { response.headers[.dpopNonce] = dpop.currentNonce }
            return response
        } catch RequestParsing.Failure.response(let response) {
            outcome.outcome = "invalid_request"
            return response
        } catch let error as OAuthError {
            outcome.outcome = error.error
            // Auth0's path answers in Auth0's words, which its SDKs test (issue 41).
            guard Self.isAuth0Path(request) else { return OAuthResponses.error(error) }
            return OAuthResponses.error(Auth0ErrorResponses.worded(error, grantType: outcome.grantType))
        } catch let limited as RateLimited {
            outcome.outcome = "rate_limited"
            return Self.isAuth0Path(request) ? Auth0ErrorResponses.rateLimited(limited) : OAuthResponses.rateLimited(limited)
        } catch {
            let response = ServerFailure.oauth(error, context: context, endpoint: "token")
            outcome.outcome = response.status == .serviceUnavailable ? "temporarily_unavailable" : "server_error"
            return response
        }
    }

    /// Whether a grant's tokens may be signed: JWT access tokens, or an ID token (`openid`
    /// asked for, or allowed when no scope is asked for).
    static func maySign(_ form: FormBody, client: AuthenticatedClient) -> Bool {
        if client.settings.accessTokenFormat == .jwt { return true }
        guard let scope = form["scope"] else { return client.settings.allowedScopes.contains("openid") }
        return scope.split(separator: " ").contains("openid")
    }

    /// Whether the request came by Auth0's path, `/oauth/token`.
    static func isAuth0Path(_ request: Request) -> Bool {
        request.uri.path == "/oauth/token"
    }

    /// The gates in order: a served grant type; for a native grant the realm's switch
    /// (docs/spec.md section 0: the realm flag first, then the client's permission); client
    /// authentication; the rate limits; the client's permission. Then the grant redeems.
    private func redeem(_ request: Request, context: ModgudRequestContext, outcome: inout GrantOutcome, started: ContinuousClock.Instant)
        async throws -> TokenResponse
    {
        let (realm, issuer) = try await parsing.realm(request)
        let form = try await parsing.tokenParameters(request)
        guard let grantType = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is required.") }
        outcome.grantType = grantType
        // Per source always; per client once the client is authenticated (`authenticate`).
        let source = parsing.source(request, context: context)
        guard let grant = grants.grant(named: grantType) else {
            try await rateLimiter.check([RateLimitBucket(.tokenPerIP, key: source)], realm: realm.realmID, settings: realm.settings)
            throw OAuthError.unsupportedGrantType("The grant type \(grantType) is not supported.")
        }
        if grant.isNative, !realm.settings.nativeGrants.enabled {
            try await rateLimiter.check([RateLimitBucket(.tokenPerIP, key: source)], realm: realm.realmID, settings: realm.settings)
            throw OAuthError.unsupportedGrantType("This grant type is not enabled for this realm.")
        }
        let (client, limits) = try await gates.authenticate(request, form, realm: realm, source: source)
        if !grant.countsItself { try await rateLimiter.run(limits) }
        let grantRequest: GrantRequest
        do {
            grantRequest = try await admit(
                grant, request, context: context, form: form, client: client, limits: limits, realm: realm, issuer: issuer, source: source)
        } catch {
            // A grant that counts itself (refresh, a code, a link) has not counted yet: a request
            // refused here is counted, so refusals cannot be tried without limit.
            if grant.countsItself { try await rateLimiter.run(limits) }
            throw error
        }
        guard grant.refusesUniformly else { return try await grant.redeem(grantRequest) }
        // A failed proof (`invalid_grant`) of a native grant, or a refused refresh, answers after
        // the jitter, so timing does not tell a wrong code from an unknown user, or a revoked
        // refresh token from one never issued (ops/enumeration-bench). Successes are not delayed.
        do {
            return try await grant.redeem(grantRequest)
        } catch let error as OAuthError where error.code == .invalidGrant {
            await parsing.configuration.jitter.wait(since: started)
            throw error
        }
    }

    /// The gates after client authentication: the client's permission, `max_age`'s form, the
    /// DPoP proof (claimed here unless the grant counts itself), the app's attestation, and for
    /// a grant that refuses uniformly, the realm's signing key. Returns what the grant redeems.
    private func admit(
        _ grant: any TokenGrant, _ request: Request, context: ModgudRequestContext, form: FormBody, client authenticated: AuthenticatedClient,
        limits: RateLimitCheck, realm: RealmDirectory.Entry, issuer: String, source: String
    ) async throws -> GrantRequest {
        var client = authenticated
        if let permission = grant.permission, !client.settings.grants.contains(permission) {
            throw OAuthError.unauthorizedClient("The client is not allowed to use this grant type.")
        }
        // RFC 9470 section 4 / OpenID Connect `max_age` (issue 46): a number of seconds. A native
        // grant signs in now, so it always holds; a refresh checks the sign-in's age.
        if let maxAge = form["max_age"], UInt32(maxAge) == nil {
            throw OAuthError.invalidRequest("max_age is a number of seconds.")
        }
        let dpop = try await gates.verifiedDPoPKey(request, issuer: issuer, client: client, claimed: !grant.countsItself)
        // Issue 47: a genuine app instance, checked before the grant redeems anything.
        client.attestation = try await gates.attestation.check(
            request, clientID: client.id, settings: client.settings, realm: realm.realmID, issuer: issuer, endpoint: "token", dpopKey: dpop?.key)
        // A realm without a signing key fails every request that may need a signature alike,
        // before any lookup (a grant checks the code or token in the transaction that appends
        // the signed tokens). Whether one may is read from the request and the client only.
        if grant.refusesUniformly, Self.maySign(form, client: client) { try await services.tokens.requireSigningKey(realm: realm.realmID) }
        return GrantRequest(
            form: form, client: client, uncounted: grant.countsItself ? limits : nil, realm: realm, issuer: issuer, source: source,
            correlationID: context.id,
            clientIP: context.peerAddress, userAgent: context.userAgent, services: services, dpopKey: dpop?.key, dpopClaim: dpop?.claim)
    }
}
