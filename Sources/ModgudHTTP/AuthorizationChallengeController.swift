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
/// The steps are the native grants' own, through the same services, so every rule holds as
/// there (uniform answers and jitter, registration posture, TOTP, rate limits, DPoP, the
/// event log, Shared Signals); this type renders them in the draft's shape:
/// - `login_hint` (an address): an email code, or with `email_delivery=link` a magic link, is
///   sent under the uniform rules; `insufficient_authorization` with an `auth_session`;
/// - no `login_hint`: a usernameless passkey ceremony, its request options in the answer;
/// - `auth_session` with `email_code`, with `user_id` and `magic_token` (a magic link), or with
///   `passkey_assertion`: the factor is redeemed; a person with TOTP on is asked for
///   `totp_code` (`insufficient_authorization` again, the proven code held in the session);
///   then `authorization_code`.
/// The gates are the token endpoint's (`TokenEndpointGates`): client authentication, the
/// per-source and per-client rate limits, and a DPoP proof, which binds the session, the code
/// and the tokens to its key.
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
            return try await step(request, context: context, started: started)
        } catch let answer as ChallengeAnswer {
            return answer.response
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

    private func step(_ request: Request, context: ModgudRequestContext, started: ContinuousClock.Instant) async throws -> Response {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else {
            throw ChallengeAnswer.redirectToWeb(realm, "First-party sign-in is not enabled for this realm.")
        }
        var form = try await parsing.form(request)
        // Section 5.1: response_type is `code`. It is REQUIRED (since draft -03) on a request that
        // begins an authorization (`newSignIn`); the later steps of a session are the server's
        // own intermediate requests (section 5.3), which may leave it out.
        if let type = form["response_type"], type != "code" {
            throw ChallengeAnswer(error: "unsupported_response_type", "response_type must be code.")
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
        let call = ChallengeCall(
            form: form, client: client, realm: realm, issuer: issuer, source: source, jkt: jkt, metadata: context.eventMetadata(), started: started)
        if let token = form["auth_session"] {
            // Section 5.1: the session must be this client's, and bound to this request's DPoP key.
            guard let session = try await services.firstParty.session(token: token, realm: realm.realmID, clientID: client.id, jkt: jkt) else {
                throw ChallengeAnswer(error: "invalid_session", "The auth_session is unknown, expired, used, another client's or bound to another key.")
            }
            if session.state.reauthenticates != nil { return try await reauthenticate(session, call) }
            return try await proceed(session, call)
        }
        return try await begin(call)
    }

    /// The first request: PKCE (S256 only), then the identifier or a passkey.
    private func begin(_ call: ChallengeCall) async throws -> Response {
        var state = try Self.newSignIn(call.form)
        guard let hint = call.form["login_hint"] else { return try await beginWithPasskey(state, call) }
        if let recoveryCode = call.form["recovery_code"] { return try await recover(state, email: hint, code: recoveryCode, call) }
        let delivery = call.form["email_delivery"] ?? "code"
        guard delivery == "code" || delivery == "link" else {
            throw ChallengeAnswer(error: "invalid_request", "email_delivery is code or link.")
        }
        guard EmailAddress(hint) != nil else { throw ChallengeAnswer(error: "invalid_request", "login_hint is not an email address.") }
        try permit(delivery == "link" ? .magic : .otp, call)
        state.email = hint
        state.delivery = delivery
        // OpenID Connect Prompt Create (`prompt=create`): the person asks to sign up, which a
        // realm with an explicit registration endpoint requires.
        state.signUp = call.form["prompt"]?.split(separator: " ").contains("create") == true
        // The registration fields come first, whatever the address (the rule of
        // POST /api/account/native/otp/request): asked for before anything is sent.
        let missing = delivery == "code" ? Self.missingNames(call.form, call.realm) : []
        if missing.isEmpty {
            try await send(state, names: Self.names(call.form), call)
        } else {
            state.awaitingNames = true
        }
        let session = try await services.firstParty.begin(
            realm: call.realm.realmID, clientID: call.client.id, jkt: call.jkt, factor: delivery == "link" ? .magicLink : .emailCode, state: state,
            metadata: call.metadata)
        if !missing.isEmpty { throw Self.askingFor(missing, session: session.token) }
        // The uniform answer (docs/spec.md sections 2 and 3): the same for every address, after the jitter.
        await parsing.configuration.jitter.wait(since: call.started)
        throw Self.sent(delivery, session: session.token)
    }

    /// The first request's `response_type` (section 5.1: REQUIRED, `code`; RFC 6749 section
    /// 4.1.2.1 `invalid_request` when missing), PKCE (S256 only, RFC 7636 section 4.3), scope and
    /// resources, OpenID Connect's `nonce` (kept for the ID token, Core section 3.1.3.6), and
    /// the step-up parameters (section 6.1; RFC 9470 section 4): `max_age` is checked for its
    /// form (every sign-in here authenticates afresh, so any age holds), `acr_values` accepted.
    static func newSignIn(_ form: FormBody) throws -> FirstPartyAuthorization.SessionState {
        guard form["response_type"] != nil else {
            throw ChallengeAnswer(error: "invalid_request", "response_type=code is required (draft-ietf-oauth-first-party-apps section 5.1).")
        }
        guard let challenge = form["code_challenge"], PKCE.isChallenge(challenge) else {
            throw ChallengeAnswer(error: "invalid_request", "code_challenge (S256, RFC 7636) is required.")
        }
        guard (form["code_challenge_method"] ?? "S256") == "S256" else {
            throw ChallengeAnswer(error: "invalid_request", "code_challenge_method must be S256.")
        }
        if let maxAge = form["max_age"], UInt32(maxAge) == nil {
            throw ChallengeAnswer(error: "invalid_request", "max_age is a number of seconds.")
        }
        if let nonce = form["nonce"], nonce.utf8.count > Self.nonceLimit {
            throw ChallengeAnswer(error: "invalid_request", "nonce is at most \(Self.nonceLimit) bytes.")
        }
        var state = FirstPartyAuthorization.SessionState(codeChallenge: challenge, scope: form["scope"], resources: form.all("resource"))
        state.nonce = form["nonce"]
        return state
    }

    /// The longest `nonce` kept (OpenID Connect sets no limit; the ID token carries it whole).
    static let nonceLimit = 512

    /// A re-authorization session presented for a step-up (section 6.1; RFC 9470): a new
    /// sign-in of the same person begins, by a code to their own address, and the presented
    /// session is spent.
    /// A session whose sign-in was revoked since (a reused code, refresh token reuse, logout) is
    /// `invalid_session`: the draft's SHOULD that a reused code revokes the tokens and the
    /// auth_session (issue 69), and the same for every other end of the sign-in.
    private func reauthenticate(_ presented: FirstPartyAuthorization.Session, _ call: ChallengeCall) async throws -> Response {
        if let family = presented.state.signInFamily, try await services.tokens.isRevoked(realm: call.realm.realmID, familyID: family) {
            throw ChallengeAnswer(error: "invalid_session", "The sign-in of the auth_session was revoked.")
        }
        var state = try Self.newSignIn(call.form)
        try permit(.otp, call)
        guard let userID = presented.state.reauthenticates,
            let profile = try await services.emailSignIn().signInProfile(of: userID, realm: call.realm.realmID), let address = profile.email
        else { throw ChallengeAnswer(error: "invalid_session", "The account of the auth_session cannot sign in.") }
        state.email = address
        state.delivery = "code"
        guard
            let session = try await services.firstParty.continueReauthentication(
                presented, realm: call.realm.realmID, clientID: call.client.id, jkt: call.jkt, state: state, metadata: call.metadata)
        else { throw ChallengeAnswer(error: "invalid_session", "The auth_session was used meanwhile.") }
        try await send(state, names: (profile.firstName, profile.lastName), call)
        throw ChallengeAnswer(
            insufficient: session.token, expecting: ["email_code"],
            "A six-digit code was sent to the account's address: send it as email_code with this auth_session.")
    }

    /// No identifier: a usernameless passkey ceremony, its options in the answer.
    private func beginWithPasskey(_ initial: FirstPartyAuthorization.SessionState, _ call: ChallengeCall) async throws -> Response {
        try permit(.passkey, call)
        var state = initial
        let begun = try await services.passkeys.beginLogin(realm: call.realm, binding: call.binding, metadata: call.metadata)
        state.passkeyCeremony = begun.ceremonyID.uuidString.lowercased()
        let session = try await services.firstParty.begin(
            realm: call.realm.realmID, clientID: call.client.id, jkt: call.jkt, factor: .passkey, state: state, metadata: call.metadata)
        throw ChallengeAnswer(
            insufficient: session.token, expecting: ["passkey_assertion"], passkeyOptions: begun.options,
            "Sign in with a passkey: send the assertion as passkey_assertion with the auth_session, or start again with login_hint.")
    }

    /// A recovery code with `login_hint` (issue 46): redeemed at once by the recovery grant's
    /// rules; the code the answer carries hands over a recovery session (docs/api.md).
    private func recover(_ state: FirstPartyAuthorization.SessionState, email: String, code: String, _ call: ChallengeCall) async throws -> Response {
        try permit(.recoveryCode, call)
        let session = try await services.firstParty.begin(
            realm: call.realm.realmID, clientID: call.client.id, jkt: call.jkt, factor: .recoveryCode, state: state, metadata: call.metadata)
        let grant = UserGrantRequest(
            client: call.client, scope: nil, resources: [], totpCode: nil, issuer: call.issuer, metadata: call.metadata, dpopKey: call.jkt)
        let response: TokenResponse
        do {
            response = try await services.recoveryCodes().redeem(email: email, code: code, grant, source: call.source, settings: call.realm.settings)
        } catch let refusal as OAuthError where refusal.error == "invalid_grant" {
            await parsing.configuration.jitter.wait(since: call.started)
            throw refusal
        }
        return try await codeAnswer(session, response, call)
    }

    /// The client must hold the grant of the factor (RFC 6749 section 5.2 `unauthorized_client`).
    func permit(_ grant: GrantType, _ call: ChallengeCall) throws {
        guard call.client.settings.grants.contains(grant) else {
            throw OAuthError.unauthorizedClient("The client is not allowed to sign in with \(grant.rawValue).")
        }
    }

    /// Section 5.2.1.
    struct CodeBody: Encodable {
        var authorizationCode: String
        enum CodingKeys: String, CodingKey { case authorizationCode = "authorization_code" }
    }
}

/// What one request of the challenge endpoint carries after its gates.
struct ChallengeCall: Sendable {
    let form: FormBody
    let client: AuthenticatedClient
    let realm: RealmDirectory.Entry
    let issuer: String
    let source: String
    let jkt: String?
    let metadata: EventMetadata
    let started: ContinuousClock.Instant

    /// What a code, link or ceremony this request starts is bound to (issue 65): the client and
    /// its attested instance.
    var binding: FlowBinding { FlowBinding(clientID: client.id, attestedKey: client.attestation?.jkt) }
}
