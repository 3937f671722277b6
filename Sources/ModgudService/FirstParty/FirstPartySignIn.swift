import Foundation
import ModgudDomain

/// The Authorization Challenge Endpoint's state machine (draft-ietf-oauth-first-party-apps,
/// issues 45 and 68): which step a request is, the session between steps, a factor held while
/// the second one is owed, the uniform answers and their jitter, and the code at the end. The
/// HTTP adapter only gates, parses and renders (`AuthorizationChallengeController`).
///
/// The steps are the native grants' own, through the same services, so every rule holds as
/// there (uniform answers and jitter, registration posture, TOTP, rate limits, DPoP, the event
/// log, Shared Signals):
/// - `login_hint` (an address): an email code, or with `email_delivery=link` a magic link, is
///   sent under the uniform rules; `insufficient_authorization` with an `auth_session`;
/// - no `login_hint`: a usernameless passkey ceremony, its request options in the answer;
/// - `auth_session` with `email_code`, with `user_id` and `magic_token`, or with
///   `passkey_assertion`: the factor is redeemed by the sign-in pipeline; a person with TOTP on
///   is asked for `totp_code` (the proven code held in the session); then the code.
public struct FirstPartySignIn: Sendable {
    let sessions: FirstPartyAuthorization
    let introspection: TokenIntrospection
    let passkeys: PasskeyService
    let emailSignIn: @Sendable () throws -> EmailSignInService
    let recoveryCodes: @Sendable () throws -> RecoveryCodeService
    /// The uniform answers' timing (docs/spec.md sections 2 and 3).
    let jitter: ResponseJitter

    public init(
        sessions: FirstPartyAuthorization, introspection: TokenIntrospection, passkeys: PasskeyService, emailSignIn: @escaping @Sendable () throws -> EmailSignInService,
        recoveryCodes: @escaping @Sendable () throws -> RecoveryCodeService, jitter: ResponseJitter
    ) {
        self.sessions = sessions
        self.introspection = introspection
        self.passkeys = passkeys
        self.emailSignIn = emailSignIn
        self.recoveryCodes = recoveryCodes
        self.jitter = jitter
    }

    /// The longest `nonce` kept (OpenID Connect sets no limit; the ID token carries it whole).
    public static let nonceLimit = 512

    /// One request after the endpoint's gates.
    public func step(_ request: FirstPartyRequest, _ call: FirstPartyCall) async throws -> FirstPartyStep {
        guard let token = request.authSession else { return try await begin(request, call) }
        // Section 5.1: the session must be this client's, and bound to this request's DPoP key.
        guard let session = try await sessions.session(token: token, realm: call.realmID, clientID: call.client.id, jkt: call.jkt) else {
            throw FirstPartyRefusal.invalidSession("The auth_session is unknown, expired, used, another client's or bound to another key.")
        }
        if session.state.reauthenticates != nil { return try await reauthenticate(session, request, call) }
        return try await proceed(session, request, call)
    }

    /// The first request: PKCE (S256 only), then the identifier or a passkey.
    private func begin(_ request: FirstPartyRequest, _ call: FirstPartyCall) async throws -> FirstPartyStep {
        var state = try Self.newSignIn(request)
        guard let hint = request.loginHint else { return try await beginWithPasskey(state, call) }
        if let recoveryCode = request.recoveryCode { return try await recover(state, email: hint, code: recoveryCode, call) }
        guard let delivery = FirstPartyAuthorization.SessionState.Delivery(rawValue: request.emailDelivery ?? "code") else {
            throw FirstPartyRefusal.invalidRequest("email_delivery is code or link.")
        }
        guard EmailAddress(hint) != nil else { throw FirstPartyRefusal.invalidRequest("login_hint is not an email address.") }
        try permit(delivery == .link ? .magic : .otp, call)
        state.email = hint
        state.delivery = delivery
        // OpenID Connect Prompt Create (`prompt=create`): the person asks to sign up, which a
        // realm with an explicit registration endpoint requires.
        state.signUp = request.prompt?.split(separator: " ").contains("create") == true
        // The registration fields come first, whatever the address (the rule of
        // POST /api/account/native/otp/request): asked for before anything is sent.
        let missing = delivery == .code ? Self.missingNames(request, call.realm) : []
        if missing.isEmpty {
            try await send(state, names: request.names, call)
        } else {
            state.awaitingNames = true
        }
        let session = try await sessions.begin(
            realm: call.realmID, clientID: call.client.id, jkt: call.jkt, factor: delivery == .link ? .magicLink : .emailCode, state: state,
            metadata: call.metadata)
        if !missing.isEmpty { return Self.askingFor(missing, session: session.token) }
        // The uniform answer (docs/spec.md sections 2 and 3): the same for every address, after the jitter.
        await jitter.wait(since: call.started)
        return Self.sent(delivery, session: session.token)
    }

    /// The first request's `response_type` (section 5.1: REQUIRED, `code`; RFC 6749 section
    /// 4.1.2.1 `invalid_request` when missing), PKCE (S256 only, RFC 7636 section 4.3), scope and
    /// resources, OpenID Connect's `nonce` (kept for the ID token, Core section 3.1.3.6), and
    /// the step-up parameters (section 6.1; RFC 9470 section 4): `max_age` is checked for its
    /// form (every sign-in here authenticates afresh, so any age holds), `acr_values` accepted.
    static func newSignIn(_ request: FirstPartyRequest) throws -> FirstPartyAuthorization.SessionState {
        guard request.responseType != nil else {
            throw FirstPartyRefusal.invalidRequest("response_type=code is required (draft-ietf-oauth-first-party-apps section 5.1).")
        }
        guard let challenge = request.codeChallenge, PKCE.isChallenge(challenge) else {
            throw FirstPartyRefusal.invalidRequest("code_challenge (S256, RFC 7636) is required.")
        }
        guard (request.codeChallengeMethod ?? "S256") == "S256" else { throw FirstPartyRefusal.invalidRequest("code_challenge_method must be S256.") }
        if let maxAge = request.maxAge, UInt32(maxAge) == nil { throw FirstPartyRefusal.invalidRequest("max_age is a number of seconds.") }
        if let nonce = request.nonce, nonce.utf8.count > Self.nonceLimit {
            throw FirstPartyRefusal.invalidRequest("nonce is at most \(Self.nonceLimit) bytes.")
        }
        var state = FirstPartyAuthorization.SessionState(codeChallenge: challenge, scope: request.scope, resources: request.resources)
        state.nonce = request.nonce
        return state
    }

    /// A re-authorization session presented for a step-up (section 6.1; RFC 9470): a new
    /// sign-in of the same person begins, by a code to their own address, and the presented
    /// session is spent. A session whose sign-in was revoked since (a reused code, refresh token
    /// reuse, logout) is `invalid_session` (issue 69).
    private func reauthenticate(_ presented: FirstPartyAuthorization.Session, _ request: FirstPartyRequest, _ call: FirstPartyCall) async throws
        -> FirstPartyStep
    {
        if let family = presented.state.signInFamily, try await introspection.isRevoked(realm: call.realmID, familyID: family) {
            throw FirstPartyRefusal.invalidSession("The sign-in of the auth_session was revoked.")
        }
        var state = try Self.newSignIn(request)
        try permit(.otp, call)
        guard let userID = presented.state.reauthenticates, let profile = try await emailSignIn().signInProfile(of: userID, realm: call.realmID),
            let address = profile.email
        else { throw FirstPartyRefusal.invalidSession("The account of the auth_session cannot sign in.") }
        state.email = address
        state.delivery = .code
        guard
            let session = try await sessions.continueReauthentication(
                presented, realm: call.realmID, clientID: call.client.id, jkt: call.jkt, state: state, metadata: call.metadata)
        else { throw FirstPartyRefusal.invalidSession("The auth_session was used meanwhile.") }
        try await send(state, names: (profile.firstName, profile.lastName), call)
        return .insufficient(
            session: session.token, expecting: ["email_code"], passkeyOptions: nil,
            description: "A six-digit code was sent to the account's address: send it as email_code with this auth_session.")
    }

    /// No identifier: a usernameless passkey ceremony, its options in the answer.
    private func beginWithPasskey(_ initial: FirstPartyAuthorization.SessionState, _ call: FirstPartyCall) async throws -> FirstPartyStep {
        try permit(.passkey, call)
        var state = initial
        let begun = try await passkeys.beginLogin(realm: call.realm, binding: call.binding, metadata: call.metadata)
        state.passkeyCeremony = begun.ceremonyID.uuidString.lowercased()
        let session = try await sessions.begin(
            realm: call.realmID, clientID: call.client.id, jkt: call.jkt, factor: .passkey, state: state, metadata: call.metadata)
        return .insufficient(
            session: session.token, expecting: ["passkey_assertion"], passkeyOptions: begun.options,
            description: "Sign in with a passkey: send the assertion as passkey_assertion with the auth_session, or start again with login_hint.")
    }

    /// A recovery code with `login_hint` (issue 46): redeemed at once by the recovery grant's
    /// rules; the code the answer carries hands over a recovery session (docs/api.md).
    private func recover(_ state: FirstPartyAuthorization.SessionState, email: String, code: String, _ call: FirstPartyCall) async throws
        -> FirstPartyStep
    {
        try permit(.recoveryCode, call)
        let session = try await sessions.begin(
            realm: call.realmID, clientID: call.client.id, jkt: call.jkt, factor: .recoveryCode, state: state, metadata: call.metadata)
        let response = try await uniformly(call) {
            try await recoveryCodes().redeem(
                email: email, code: code, call.grant(scope: nil, resources: [], totpCode: nil), source: call.source, settings: call.realm.settings)
        }
        return try await codeAnswer(session, response, call)
    }

    /// The client must hold the grant of the factor (RFC 6749 section 5.2 `unauthorized_client`).
    func permit(_ grant: GrantType, _ call: FirstPartyCall) throws {
        guard call.client.settings.grants.contains(grant) else {
            throw OAuthError.unauthorizedClient("The client is not allowed to sign in with \(grant.rawValue).")
        }
    }

    /// A redemption whose `invalid_grant` is answered after the jitter, as the token endpoint
    /// answers it: a wrong code, link or assertion takes as long as a right one.
    func uniformly<T: Sendable>(_ call: FirstPartyCall, _ redeem: () async throws -> T) async throws -> T {
        do {
            return try await redeem()
        } catch let refusal as OAuthError where refusal.code == .invalidGrant {
            await jitter.wait(since: call.started)
            throw refusal
        }
    }
}
