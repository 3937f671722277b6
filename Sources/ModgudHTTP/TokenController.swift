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
            let form = try await parsing.form(request)
            guard let grantType = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is required.") }
            outcome.grantType = grantType
            let metadata = EventMetadata(correlationID: context.id, actor: nil, clientIP: context.peerAddress)
            // SPEC.md section 0: per source before any work; per client once the client is
            // authenticated (see `authenticate`).
            let source = parsing.source(request, context: context)
            try await core.rateLimiter.check(.tokenPerIP, key: source, realm: realm.realmID, settings: realm.settings)
            switch grantType {
            case GrantType.refreshToken.rawValue:
                let client = try await authenticate(request, form, realm: realm, source: source)
                guard let refreshToken = form["refresh_token"] else { throw OAuthError.invalidRequest("refresh_token is required.") }
                outcome.outcome = "success"
                return OAuthResponses.token(
                    try await core.tokenService.refresh(
                        client: client, refreshToken: refreshToken, resources: form.all("resource"), issuer: issuer, metadata: metadata))
            case GrantType.clientCredentials.rawValue:
                let client = try await authenticate(request, form, realm: realm, source: source)
                outcome.outcome = "success"
                return OAuthResponses.token(
                    try await core.tokenService.clientCredentials(
                        client: client, scope: form["scope"], resources: form.all("resource"), issuer: issuer, metadata: metadata))
            case let native where GrantType(rawValue: native).map(GrantType.native.contains) == true:
                // SPEC.md section 0: the realm flag first, then the client's permission.
                guard realm.settings.nativeGrants.enabled else {
                    throw OAuthError.unsupportedGrantType("This grant type is not enabled for this realm.")
                }
                let client = try await authenticate(request, form, realm: realm, source: source)
                guard client.settings.grants.contains(GrantType(rawValue: native)!) else {
                    throw OAuthError.unauthorizedClient("The client is not allowed to use this grant type.")
                }
                let grant = EmailSignInService.GrantRequest(
                    client: client, scope: form["scope"], resources: form.all("resource"), totpCode: form["totp_code"], issuer: issuer,
                    metadata: EventMetadata(correlationID: context.id, actor: "client:\(client.id)", clientIP: context.peerAddress))
                let response = try await uniformFailures(started: started) {
                    switch GrantType(rawValue: native)! {
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
                        guard let ceremonyID = form["ceremony_id"], let assertion = form["assertion"] else {
                            throw OAuthError.invalidRequest("ceremony_id and assertion are required.")
                        }
                        return OAuthResponses.token(
                            try await core.passkeys.redeem(client: client, ceremonyID: ceremonyID, assertion: assertion, grant))
                    default:
                        throw OAuthError.unsupportedGrantType("The grant type \(native) is not supported.")
                    }
                }
                outcome.outcome = "success"
                return response
            default:
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

    /// Authenticates the client, then counts the request against its per-client limit. Only
    /// authenticated requests count: unknown client ids create no buckets, and a flood of
    /// wrong secrets does not spend a confidential client's budget.
    /// A public client's id is shared by every installation of the app, so it is counted per
    /// (client, source /64), and per client only as a high circuit breaker (README, "Rate limits").
    private func authenticate(_ request: Request, _ form: FormBody, realm: RealmDirectory.Entry, source: String) async throws
        -> AuthenticatedClient
    {
        let (id, secret) = try parsing.clientCredentials(request, form)
        let client = try await core.clientAuthenticator.authenticate(realm: realm.realmID, clientID: id, secret: secret)
        if client.settings.type == .public {
            try await core.rateLimiter.check(
                .tokenPerClientSource, key: client.id + " " + source, realm: realm.realmID, settings: realm.settings, source: source)
        }
        try await core.rateLimiter.check(.tokenPerClient, key: client.id, realm: realm.realmID, settings: realm.settings, source: source)
        return client
    }
}
