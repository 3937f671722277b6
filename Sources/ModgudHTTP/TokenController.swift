import EventSourcing
import Hummingbird
import Logging
import ModgudDomain
import ModgudService

/// POST /connect/token (RFC 6749 section 3.2).
struct TokenController: Sendable {
    let core: ModgudCore
    let parsing: RequestParsing

    func token(_ request: Request, context: ModgudRequestContext) async -> Response {
        var outcome = GrantOutcome()
        let response = await grant(request, context: context, outcome: &outcome)
        outcome.record()
        return response
    }

    private func grant(_ request: Request, context: ModgudRequestContext, outcome: inout GrantOutcome) async -> Response {
        let started = ContinuousClock.now
        do {
            let (realm, issuer) = try await parsing.realm(request)
            let form = try await parsing.tokenParameters(request)
            guard let grantType = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is required.") }
            outcome.grantType = grantType
            let metadata = EventMetadata(correlationID: context.id, actor: nil, clientIP: context.peerAddress)
            // SPEC.md section 0: per source always; per client once the client is authenticated
            // (see `authenticate`). A request's buckets are counted in one statement.
            let source = parsing.source(request, context: context)
            let perSource = RateLimitBucket(.tokenPerIP, key: source)
            switch grantType {
            case GrantType.refreshToken.rawValue:
                let (client, limits) = try await authenticate(request, form, realm: realm, source: source)
                guard let refreshToken = form["refresh_token"] else {
                    try await count(limits)
                    throw OAuthError.invalidRequest("refresh_token is required.")
                }
                // The count rides in the same pipeline as the refresh token's lookup.
                let tokens = try await core.tokenService.refresh(
                    client: client, refreshToken: refreshToken, resources: form.all("resource"), issuer: issuer, metadata: metadata,
                    rateLimit: limits)
                outcome.outcome = "success"
                return OAuthResponses.token(tokens)
            case GrantType.clientCredentials.rawValue:
                let (client, limits) = try await authenticate(request, form, realm: realm, source: source)
                try await count(limits)
                outcome.outcome = "success"
                return OAuthResponses.token(
                    try await core.tokenService.clientCredentials(
                        client: client, scope: form["scope"], resources: form.all("resource"), issuer: issuer, metadata: metadata))
            case let native where Auth0Compatibility.grantType(native).map(GrantType.native.contains) == true:
                // SPEC.md section 0: the realm flag first, then the client's permission.
                guard realm.settings.nativeGrants.enabled else {
                    try await core.rateLimiter.check([perSource], realm: realm.realmID, settings: realm.settings)
                    throw OAuthError.unsupportedGrantType("This grant type is not enabled for this realm.")
                }
                let (client, limits) = try await authenticate(request, form, realm: realm, source: source)
                try await count(limits)
                let granted = Auth0Compatibility.grantType(native)!
                guard client.settings.grants.contains(granted) else {
                    throw OAuthError.unauthorizedClient("The client is not allowed to use this grant type.")
                }
                let auth0 = native == Auth0Compatibility.webauthnGrant
                let grant = EmailSignInService.GrantRequest(
                    client: client, scope: auth0 ? Auth0Compatibility.scope(form["scope"], client: client.settings) : form["scope"],
                    resources: auth0 ? try Auth0Compatibility.resources(form, realm: realm) : form.all("resource"), totpCode: form["totp_code"],
                    issuer: issuer, metadata: EventMetadata(correlationID: context.id, actor: "client:\(client.id)", clientIP: context.peerAddress))
                let response = try await uniformFailures(started: started) {
                    switch granted {
                    case .otp:
                        guard let username = form["username"], let code = form["otp_code"] else {
                            throw OAuthError.invalidRequest("username and otp_code are required.")
                        }
                        return OAuthResponses.token(try await core.emailSignIn().redeemCode(email: username, code: code, grant))
                    case .magic:
                        guard let userID = form["user_id"], let token = form["magic_token"] else {
                            throw OAuthError.invalidRequest("user_id and magic_token are required.")
                        }
                        return OAuthResponses.token(try await core.emailSignIn().redeemMagicLink(userID: userID, token: token, grant))
                    case .passkey:
                        return OAuthResponses.token(try await passkeyGrant(form, auth0: auth0, grant: grant, realm: realm, source: source))
                    default:
                        throw OAuthError.unsupportedGrantType("The grant type \(native) is not supported.")
                    }
                }
                outcome.outcome = "success"
                return response
            default:
                try await core.rateLimiter.check([perSource], realm: realm.realmID, settings: realm.settings)
                throw OAuthError.unsupportedGrantType("The grant type \(grantType) is not supported.")
            }
        } catch RequestParsing.Failure.response(let response) {
            outcome.outcome = "invalid_request"
            return response
        } catch let error as OAuthError {
            outcome.outcome = error.error
            return OAuthResponses.error(error)
        } catch let limited as RateLimited {
            outcome.outcome = "rate_limited"
            return OAuthResponses.rateLimited(limited)
        } catch {
            let response = ServerFailure.oauth(error, context: context, endpoint: "token")
            outcome.outcome = response.status == .serviceUnavailable ? "temporarily_unavailable" : "server_error"
            return response
        }
    }

    /// `urn:cocoar:passkey` (`ceremony_id` with `assertion` to sign in, with `attestation` to
    /// sign up) and Auth0's `urn:okta:params:oauth:grant-type:webauthn` (`auth_session` with
    /// `authn_response`: an attestation signs up, an assertion signs in). A sign-up also counts
    /// against the passkey limit per source, since its answer may tell that an address has an
    /// account (issue 14).
    private func passkeyGrant(_ form: FormBody, auth0: Bool, grant: EmailSignInService.GrantRequest, realm: RealmDirectory.Entry, source: String)
        async throws -> TokenResponse
    {
        let (ceremony, assertion, attestation): (String?, String?, String?)
        if auth0 {
            guard let session = form["auth_session"], let response = form["authn_response"] else {
                throw OAuthError.invalidRequest("auth_session and authn_response are required.")
            }
            let signUp = Auth0Compatibility.isAttestation(response)
            (ceremony, assertion, attestation) = (session, signUp ? nil : response, signUp ? response : nil)
        } else {
            (ceremony, assertion, attestation) = (form["ceremony_id"], form["assertion"], form["attestation"])
        }
        guard let ceremony, (assertion == nil) != (attestation == nil) else {
            throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.")
        }
        if let attestation {
            try await core.rateLimiter.check(.passkeyPerIP, key: source, realm: realm.realmID, settings: realm.settings)
            return try await core.passkeys.redeemSignUp(client: grant.client, ceremonyID: ceremony, attestation: Array(attestation.utf8), grant)
        }
        return try await core.passkeys.redeem(client: grant.client, ceremonyID: ceremony, assertion: assertion!, grant)
    }

    /// SPEC.md section 0: a failed proof (`invalid_grant`) answers after the jitter, so timing
    /// does not tell a wrong code from an unknown user. Successes are not delayed.
    private func uniformFailures(started: ContinuousClock.Instant, _ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let error as OAuthError where error.error == "invalid_grant" {
            await parsing.configuration.jitter.wait(since: started)
            throw error
        }
    }

    /// Authenticates the client (from the instance's client cache) and prepares the count of
    /// the request's buckets: per source, and once authenticated per client. Only
    /// authenticated requests count per client: unknown client ids create no buckets, and a
    /// flood of wrong secrets does not spend a confidential client's budget; a failed
    /// authentication is counted per source before it is answered.
    /// A public client's id is shared by every installation of the app, so it is counted per
    /// (client, source /64), and per client only as a high circuit breaker (README, "Rate limits").
    private func authenticate(_ request: Request, _ form: FormBody, realm: RealmDirectory.Entry, source: String) async throws
        -> (AuthenticatedClient, RateLimitCheck)
    {
        let perSource = RateLimitBucket(.tokenPerIP, key: source)
        let client: AuthenticatedClient
        do {
            let (id, secret) = try parsing.clientCredentials(request, form)
            client = try await core.clientAuthenticator.authenticate(realm: realm.realmID, clientID: id, secret: secret)
        } catch {
            try await core.rateLimiter.check([perSource], realm: realm.realmID, settings: realm.settings)
            throw error
        }
        var buckets = [perSource]
        if client.settings.type == .public {
            buckets.append(RateLimitBucket(.tokenPerClientSource, key: client.id + " " + source, source: source))
        }
        buckets.append(RateLimitBucket(.tokenPerClient, key: client.id, source: source))
        return (client, core.rateLimiter.prepare(buckets, realm: realm.realmID, settings: realm.settings))
    }

    /// Runs a prepared count on its own.
    private func count(_ limits: RateLimitCheck) async throws {
        try await limits.run(on: core.pool)
    }
}
