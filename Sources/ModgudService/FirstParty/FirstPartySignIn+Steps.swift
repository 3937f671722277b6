import Foundation
import ModgudDomain

/// The later steps of the Authorization Challenge Endpoint: what a request with an
/// `auth_session` brings (draft-ietf-oauth-first-party-apps section 5.1), redeemed through the
/// sign-in pipeline by its native grant's service.
extension FirstPartySignIn {
    /// A later request: the names the realm asked for, or the factor; then the code. A person
    /// with TOTP on is held: the proven code or link stays in the session (unspent) until the
    /// second factor comes.
    func proceed(_ current: FirstPartyAuthorization.Session, _ request: FirstPartyRequest, _ call: FirstPartyCall) async throws -> FirstPartyStep {
        var session = current
        if session.state.awaitingNames { return try await completeNames(session, request, call) }
        let state = session.state
        var grant = call.grant(scope: state.scope, resources: state.resources, totpCode: request.totpCode)
        // OpenID Connect Core section 3.1.3.6: the ID token carries the nonce of the request
        // that began the sign-in (issue 69); the code hands that ID token over.
        grant.nonce = state.nonce
        var response: TokenResponse
        do {
            response = try await uniformly(call) { try await redeem(&session, request, grant, call) }
        } catch let refusal as OAuthError where refusal == SecondFactor.refusal {
            // Held for the second factor: the code or link is unspent, and kept in the session.
            try await sessions.update(session, realm: call.realmID, clientID: call.client.id)
            return .insufficient(
                session: session.token, expecting: ["totp_code"], passkeyOptions: nil,
                description: "Two-factor authentication is required: send totp_code with the auth_session.")
        }
        // Issue 46: after a code or a link, the hint that an automatic passkey upgrade may follow.
        if state.delivery != nil { response.passkeyUpgrade = await passkeys.upgradeHint(for: response, client: call.client) }
        return try await codeAnswer(session, response, call)
    }

    /// The factor the session began with, for the person it named; what it proves is held in
    /// `session` (kept only when the second factor is owed).
    private func redeem(
        _ session: inout FirstPartyAuthorization.Session, _ request: FirstPartyRequest, _ grant: UserGrantRequest, _ call: FirstPartyCall
    ) async throws -> TokenResponse {
        let state = session.state
        switch state.delivery {
        case .code?:
            if let code = request.emailCode ?? state.heldCode, let email = state.email {
                try permit(.otp, call)
                session.state.heldCode = code
                return try await emailSignIn().redeemCode(email: email, code: code, grant)
            }
        case .link?:
            if let link = request.link ?? state.heldLink, let email = state.email {
                try permit(.magic, call)
                // Another person's link is refused as a wrong one is (the same answer, after the jitter).
                guard try await emailSignIn().isAccount(link.userID, of: email, realm: call.realmID) else { throw EmailSignInService.invalidLink }
                session.state.heldLink = link
                return try await emailSignIn().redeemMagicLink(userID: link.userID, token: link.token, grant)
            }
        case nil:
            if let assertion = request.passkeyAssertion, let ceremony = state.passkeyCeremony {
                try permit(.passkey, call)
                return try await passkeys.redeem(client: call.client, ceremonyID: ceremony, assertion: assertion, grant)
            }
        }
        throw FirstPartyRefusal.invalidRequest("Send what the session expects: email_code, user_id with magic_token, or passkey_assertion.")
    }

    /// Section 5.2.1: the session's one authorization code, handing over `response`.
    func codeAnswer(_ session: FirstPartyAuthorization.Session, _ response: TokenResponse, _ call: FirstPartyCall) async throws -> FirstPartyStep {
        guard
            let code = try await sessions.issueCode(
                for: session, realm: call.realmID, clientID: call.client.id, jkt: call.jkt, response: response, metadata: call.metadata)
        else { throw FirstPartyRefusal.invalidSession("The auth_session was used meanwhile.") }
        return .authorizationCode(code)
    }

    /// The registration fields the realm asked for arrive: the code is sent with them.
    private func completeNames(_ current: FirstPartyAuthorization.Session, _ request: FirstPartyRequest, _ call: FirstPartyCall) async throws
        -> FirstPartyStep
    {
        var session = current
        let missing = Self.missingNames(request, call.realm)
        guard missing.isEmpty else { return Self.askingFor(missing, session: session.token) }
        try await send(session.state, names: request.names, call)
        session.state.awaitingNames = false
        try await sessions.update(session, realm: call.realmID, clientID: call.client.id)
        await jitter.wait(since: call.started)
        return Self.sent(session.state.delivery ?? .code, session: session.token)
    }

    /// Sends the email code (`POST /api/account/native/otp/request`'s rules, or with
    /// `prompt=create` `/api/account/native/register`'s) or, with `email_delivery=link`, the
    /// magic link (`/api/account/magic-link/request`'s).
    func send(_ state: FirstPartyAuthorization.SessionState, names: (given: String?, family: String?), _ call: FirstPartyCall) async throws {
        guard let address = state.email else { return }
        do {
            if state.delivery == .link {
                guard call.realm.settings.magicLinksOn else { throw FirstPartyRefusal.redirectToWeb(call.realm, "Magic links are not enabled for this realm.") }
                try await emailSignIn().requestMagicLink(
                    email: address, source: call.source, realm: call.realm, issuer: call.issuer, binding: call.binding, metadata: call.metadata)
            } else {
                let endpoint: EmailSignInService.CodeEndpoint =
                    state.signUp && call.realm.settings.registrationPosture == .explicitEndpoint ? .register : .otpRequest
                try await emailSignIn().requestCode(
                    .init(email: address, firstName: names.given, lastName: names.family, source: call.source), endpoint: endpoint, realm: call.realm,
                    binding: call.binding, metadata: call.metadata)
            }
        } catch is EmailSignInService.InvalidEmailAddress {
            throw FirstPartyRefusal.invalidRequest("login_hint is not an email address.")
        } catch let refused as EmailSignInService.RequestRefused {
            throw FirstPartyRefusal.invalidRequest(refused.message)
        }
    }

    /// What was sent, in the uniform words (the same whether or not the address has an account).
    static func sent(_ delivery: FirstPartyAuthorization.SessionState.Delivery, session: String) -> FirstPartyStep {
        switch delivery {
        case .link:
            return .insufficient(
                session: session, expecting: ["user_id", "magic_token"], passkeyOptions: nil,
                description: "If the address may sign in, a link was sent to it: send its userId and token as user_id and magic_token with the auth_session.")
        case .code:
            return .insufficient(
                session: session, expecting: ["email_code"], passkeyOptions: nil,
                description: "If the address may sign in or sign up, a six-digit code was sent to it: send it as email_code with the auth_session.")
        }
    }

    /// The registration fields still wanted, by their parameter names (OpenID Connect's claim names).
    static func askingFor(_ missing: [String], session: String) -> FirstPartyStep {
        .insufficient(
            session: session, expecting: missing, passkeyOptions: nil,
            description: "This realm asks for \(missing.joined(separator: " and ")) before it sends a code: send them with the auth_session.")
    }

    /// The names the realm requires that the request lacks (`EmailSignInService.missingNames`).
    static func missingNames(_ request: FirstPartyRequest, _ realm: RealmDirectory.Entry) -> [String] {
        EmailSignInService.missingNames(firstName: request.givenName, lastName: request.familyName, realm.settings.registrationFields).map {
            $0 == .firstName ? "given_name" : "family_name"
        }
    }
}
