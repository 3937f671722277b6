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
    let clients: ClientAuthenticator
    let rateLimiter: RateLimiter

    init(services: GrantServices, clients: ClientAuthenticator, parsing: RequestParsing, grants: GrantRegistry = .standard) {
        self.parsing = parsing
        self.grants = grants
        self.services = services
        self.clients = clients
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
        let (client, limits) = try await authenticate(request, form, realm: realm, source: source)
        if !grant.countsItself { try await rateLimiter.run(limits) }
        if let permission = grant.permission, !client.settings.grants.contains(permission) {
            throw OAuthError.unauthorizedClient("The client is not allowed to use this grant type.")
        }
        let dpop: (key: String, claim: DPoPClaim?)?
        do {
            dpop = try await verifiedDPoPKey(request, issuer: issuer, client: client, claimed: !grant.countsItself)
        } catch {
            // A grant that counts itself (refresh) has not counted yet: a refused proof is
            // counted here, so proofs cannot be tried without limit.
            if grant.countsItself { try await rateLimiter.run(limits) }
            throw error
        }
        let grantRequest = GrantRequest(
            form: form, client: client, limits: limits, realm: realm, issuer: issuer, source: source, correlationID: context.id,
            clientIP: context.peerAddress, userAgent: context.userAgent, services: services, dpopKey: dpop?.key, dpopClaim: dpop?.claim)
        guard grant.refusesUniformly else { return try await grant.redeem(grantRequest) }
        // A realm without a signing key fails every sign-in alike, before any lookup (a grant
        // checks the code or token in the transaction that appends the signed tokens).
        try await services.tokens.requireSigningKey(realm: realm.realmID)
        // A failed proof (`invalid_grant`) of a native grant, or a refused refresh, answers after
        // the jitter, so timing does not tell a wrong code from an unknown user, or a revoked
        // refresh token from one never issued (ops/enumeration-bench). Successes are not delayed.
        do {
            return try await grant.redeem(grantRequest)
        } catch let error as OAuthError where error.error == "invalid_grant" {
            await parsing.configuration.jitter.wait(since: started)
            throw error
        }
    }

    /// RFC 9449 section 5: a `DPoP` header binds the grant's tokens to its key; the proof is
    /// checked (section 4.3) before the grant redeems anything, so a bad proof spends no code.
    /// A client set to `off` is answered as a server without DPoP would (the header ignored);
    /// one set to `required` gets `invalid_dpop_proof` without a proof. A client with
    /// `dpopNonce` gets `use_dpop_nonce` for a proof without a server nonce.
    /// - Parameter claimed: claim the proof's jti now; otherwise the claim is returned for the
    ///   grant to send in its own pipeline.
    private func verifiedDPoPKey(_ request: Request, issuer: String, client: AuthenticatedClient, claimed: Bool) async throws
        -> (key: String, claim: DPoPClaim?)?
    {
        guard client.settings.dpop != .off else { return nil }
        let proofs = request.headers[values: .dpop]
        guard !proofs.isEmpty else {
            if client.settings.dpop == .required { throw DPoPError.invalid("this client must send a DPoP proof") }
            return nil
        }
        // Section 4.3, step 1: exactly one header.
        guard proofs.count == 1 else { throw DPoPError.invalid("send exactly one DPoP header") }
        guard let verifier = services.dpop else { throw DPoPError.invalid("this server cannot check DPoP proofs") }
        let url = RequestParsing.base(of: issuer) + request.uri.path
        let checked = try verifier.check(proofs[0], method: "POST", url: url, requireNonce: client.settings.dpopNonce)
        guard claimed else { return (checked.proof.key.thumbprint, checked.claim) }
        try await verifier.claim(checked.claim)
        return (checked.proof.key.thumbprint, nil)
    }

    /// Authenticates the client (from the instance's client cache) and prepares the count of
    /// the request's buckets: per source, and once authenticated per client. Only
    /// authenticated requests count per client: unknown client ids create no buckets, and a
    /// flood of wrong secrets does not spend a confidential client's budget; a failed
    /// authentication is counted per source before it is answered.
    /// A public client's id is shared by every installation of the app, so it is counted per
    /// (client, source /64), and per client only as a high circuit breaker (docs/architecture.md, "Rate limits").
    private func authenticate(_ request: Request, _ form: FormBody, realm: RealmDirectory.Entry, source: String) async throws
        -> (AuthenticatedClient, RateLimitCheck)
    {
        let perSource = RateLimitBucket(.tokenPerIP, key: source)
        let client: AuthenticatedClient
        do {
            let (id, secret) = try parsing.clientCredentials(request, form)
            client = try await clients.authenticate(realm: realm.realmID, clientID: id, secret: secret)
        } catch {
            try await rateLimiter.check([perSource], realm: realm.realmID, settings: realm.settings)
            throw error
        }
        var buckets = [perSource]
        if client.settings.type == .public {
            buckets.append(RateLimitBucket(.tokenPerClientSource, key: client.id + " " + source, source: source))
        }
        buckets.append(RateLimitBucket(.tokenPerClient, key: client.id, source: source))
        return (client, rateLimiter.prepare(buckets, realm: realm.realmID, settings: realm.settings))
    }
}
