import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// POST /connect/authorization-challenge: OAuth 2.0 for First-Party Applications
/// (draft-ietf-oauth-first-party-apps, issue 45). A native app signs a person in with its own
/// UI and no browser, step by step, and gets an authorization code it redeems at the token
/// endpoint with its PKCE verifier (`AuthorizationCodeGrant`).
///
/// A thin adapter (issue 68): the gates are the token endpoint's (`TokenEndpointGates`: client
/// authentication, the per-source and per-client rate limits, a DPoP proof that binds the
/// session, the code and the tokens to its key, the client's attestation); the steps are
/// `FirstPartySignIn`'s, whose typed outcome this type renders in the draft's shape.
struct AuthorizationChallengeController: Sendable {
    let gates: TokenEndpointGates
    let parsing: RequestParsing
    let services: GrantServices

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(Self.path), use: challenge)
    }

    static let path = FirstPartyPaths.challenge

    /// One step. Refusals are the draft's error response (section 5.2.2) or the OAuth ones.
    func challenge(_ request: Request, context: ModgudRequestContext) async -> Response {
        let started = ContinuousClock.now
        do {
            switch try await step(request, context: context, started: started) {
            case .authorizationCode(let code):
                return OAuthResponses.json(CodeBody(authorizationCode: code))
            case .insufficient(let session, let expecting, let options, let description):
                return ChallengeAnswer(insufficient: session, expecting: expecting, passkeyOptions: options, description).response
            }
        } catch let refusal as FirstPartyRefusal {
            return ChallengeAnswer(refusal).response
        } catch let refusal as DPoPError {
            var response = ChallengeAnswer(refusal).response
            if let dpop = services.dpop { response.headers[.dpopNonce] = dpop.currentNonce }
            return response
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let error as OAuthError {
            return OAuthResponses.error(error)
        } catch let limited as RateLimited {
            return OAuthResponses.rateLimited(limited)
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "authorization_challenge")
        }
    }

    private func step(_ request: Request, context: ModgudRequestContext, started: ContinuousClock.Instant) async throws -> FirstPartyStep {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else {
            throw FirstPartyRefusal.redirectToWeb(realm, "First-party sign-in is not enabled for this realm.")
        }
        var form = try await parsing.form(request)
        // Section 5.1: response_type is `code`. It is REQUIRED (since draft -03) on a request that
        // begins an authorization (`FirstPartySignIn.newSignIn`); the later steps of a session are
        // the server's own intermediate requests (section 5.3), which may leave it out.
        if let type = form["response_type"], type != "code" {
            throw FirstPartyRefusal(.unsupportedResponseType, "response_type must be code.")
        }
        // Section 5.1: a public client may leave client_id out when its auth_session names it.
        if form["client_id"] == nil, request.headers[.authorization] == nil, let token = form["auth_session"],
            let owner = try await services.firstParty.clientOfSession(token: token, realm: realm.realmID)
        {
            form = form.adding("client_id", owner)
        }
        let source = parsing.source(request, context: context)
        let (authenticated, limits) = try await gates.authenticate(request, form, realm: realm, source: source)
        try await services.rateLimiter.run(limits)
        let jkt = try await gates.verifiedDPoPKey(request, issuer: issuer, client: authenticated, claimed: true)?.key
        // The app's attested instance, as at the token endpoint: what the first request sends or
        // begins is bound to it, and a later one redeems as it (issue 65).
        var client = authenticated
        client.attestation = try await gates.attestation.check(
            request, clientID: client.id, settings: client.settings, realm: realm.realmID, issuer: issuer, endpoint: "authorization_challenge", dpopKey: jkt)
        let call = FirstPartyCall(
            client: client, realm: realm, issuer: issuer, source: source, jkt: jkt, metadata: context.eventMetadata(), started: started)
        let signIn = FirstPartySignIn(
            sessions: services.firstParty, introspection: services.introspection, passkeys: services.passkeys, emailSignIn: services.emailSignIn,
            recoveryCodes: services.recoveryCodes, jitter: parsing.configuration.jitter)
        return try await signIn.step(Self.parameters(form), call)
    }

    /// The form's parameters, by their names in the draft and Modgud's factor members.
    static func parameters(_ form: FormBody) -> FirstPartyRequest {
        var request = FirstPartyRequest()
        (request.responseType, request.codeChallenge, request.codeChallengeMethod) = (form["response_type"], form["code_challenge"], form["code_challenge_method"])
        (request.maxAge, request.nonce, request.scope, request.resources) = (form["max_age"], form["nonce"], form["scope"], form.all("resource"))
        (request.loginHint, request.recoveryCode, request.emailDelivery, request.prompt) = (form["login_hint"], form["recovery_code"], form["email_delivery"], form["prompt"])
        (request.givenName, request.familyName) = (form["given_name"], form["family_name"])
        (request.authSession, request.emailCode, request.totpCode) = (form["auth_session"], form["email_code"], form["totp_code"])
        (request.userID, request.magicToken, request.passkeyAssertion) = (form["user_id"], form["magic_token"], form["passkey_assertion"])
        return request
    }

    /// Section 5.2.1.
    struct CodeBody: Encodable {
        var authorizationCode: String
        enum CodingKeys: String, CodingKey { case authorizationCode = "authorization_code" }
    }
}
