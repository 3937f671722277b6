import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The later steps of the Authorization Challenge Endpoint: what a request with an
/// `auth_session` brings (draft-ietf-oauth-first-party-apps section 5.1), redeemed by its native
/// grant's service.
extension AuthorizationChallengeController {
    /// A later request: the names the realm asked for, or the factor, redeemed by its native
    /// grant's service; then the code.
    func proceed(_ current: FirstPartyAuthorization.Session, _ call: ChallengeCall) async throws -> Response {
        var session = current
        if session.state.awaitingNames {
            return try await completeNames(session, call)
        }
        let state = session.state
        var grant = UserGrantRequest(
            client: call.client, scope: state.scope, resources: state.resources, totpCode: call.form["totp_code"], issuer: call.issuer,
            metadata: call.metadata, dpopKey: call.jkt)
        // OpenID Connect Core section 3.1.3.6: the ID token carries the nonce of the request
        // that began the sign-in (issue 69); the code hands that ID token over.
        grant.nonce = state.nonce
        var response: TokenResponse
        do {
            // Each session takes the factor it began with, for the person it named.
            if state.delivery == "code", let code = call.form["email_code"] ?? state.heldCode, let email = state.email {
                try permit(.otp, call)
                session.state.heldCode = code
                response = try await services.emailSignIn().redeemCode(email: email, code: code, grant)
            } else if state.delivery == "link", let link = Self.link(call.form) ?? state.heldLink, let email = state.email {
                try permit(.magic, call)
                // Another person's link is refused as a wrong one is (the same answer, after the jitter).
                guard try await services.emailSignIn().isAccount(link.userID, of: email, realm: call.realm.realmID) else {
                    throw EmailSignInService.invalidLink
                }
                session.state.heldLink = link
                response = try await services.emailSignIn().redeemMagicLink(userID: link.userID, token: link.token, grant)
            } else if let assertion = call.form["passkey_assertion"], let ceremony = state.passkeyCeremony {
                try permit(.passkey, call)
                response = try await services.passkeys.redeem(client: call.client, ceremonyID: ceremony, assertion: assertion, grant)
            } else {
                throw ChallengeAnswer(
                    error: "invalid_request", "Send what the session expects: email_code, user_id with magic_token, or passkey_assertion.")
            }
        } catch let refusal as OAuthError where refusal == EmailSignInService.secondFactorRefusal {
            // The factor held until the second one comes (the code or link is unspent).
            try await services.firstParty.update(session, realm: call.realm.realmID, clientID: call.client.id)
            await parsing.configuration.jitter.wait(since: call.started)
            throw ChallengeAnswer(insufficient: session.token, expecting: ["totp_code"], "Two-factor authentication is required: send totp_code with the auth_session.")
        } catch let refusal as OAuthError where refusal.error == "invalid_grant" {
            await parsing.configuration.jitter.wait(since: call.started)
            throw refusal
        }
        // Issue 46: after a code or a link, the hint that an automatic passkey upgrade may follow.
        if state.delivery != nil { response.passkeyUpgrade = await services.passkeys.upgradeHint(for: response, client: call.client) }
        return try await codeAnswer(session, response, call)
    }

    /// Section 5.2.1: the session's one authorization code, handing over `response`.
    func codeAnswer(_ session: FirstPartyAuthorization.Session, _ response: TokenResponse, _ call: ChallengeCall) async throws -> Response {
        guard
            let code = try await services.firstParty.issueCode(
                for: session, realm: call.realm.realmID, clientID: call.client.id, jkt: call.jkt, response: response, metadata: call.metadata)
        else { throw ChallengeAnswer(error: "invalid_session", "The auth_session was used meanwhile.") }
        return OAuthResponses.json(CodeBody(authorizationCode: code))
    }

    /// The registration fields the realm asked for arrive: the code is sent with them.
    private func completeNames(_ current: FirstPartyAuthorization.Session, _ call: ChallengeCall) async throws -> Response {
        var session = current
        let missing = Self.missingNames(call.form, call.realm)
        guard missing.isEmpty else { throw Self.askingFor(missing, session: session.token) }
        try await send(session.state, names: Self.names(call.form), call)
        session.state.awaitingNames = false
        try await services.firstParty.update(session, realm: call.realm.realmID, clientID: call.client.id)
        await parsing.configuration.jitter.wait(since: call.started)
        throw Self.sent(session.state.delivery ?? "code", session: session.token)
    }

    /// Sends the email code (`POST /api/account/native/otp/request`'s rules, or with
    /// `prompt=create` `/api/account/native/register`'s) or, with `email_delivery=link`, the
    /// magic link (`/api/account/magic-link/request`'s).
    func send(_ state: FirstPartyAuthorization.SessionState, names: (given: String?, family: String?), _ call: ChallengeCall) async throws {
        guard let address = state.email else { return }
        do {
            if state.delivery == "link" {
                guard call.realm.settings.magicLinksOn else {
                    throw ChallengeAnswer.redirectToWeb(call.realm, "Magic links are not enabled for this realm.")
                }
                try await services.emailSignIn().requestMagicLink(
                    email: address, source: call.source, realm: call.realm, issuer: call.issuer, binding: call.binding, metadata: call.metadata)
            } else {
                let endpoint: EmailSignInService.CodeEndpoint =
                    state.signUp && call.realm.settings.registrationPosture == .explicitEndpoint ? .register : .otpRequest
                try await services.emailSignIn().requestCode(
                    .init(email: address, firstName: names.given, lastName: names.family, source: call.source), endpoint: endpoint, realm: call.realm,
                    binding: call.binding, metadata: call.metadata)
            }
        } catch is EmailSignInService.InvalidEmailAddress {
            throw ChallengeAnswer(error: "invalid_request", "login_hint is not an email address.")
        } catch let refused as EmailSignInService.RequestRefused {
            throw ChallengeAnswer(error: "invalid_request", refused.message)
        }
    }

    // MARK: Answers and parameters

    /// What was sent, in the uniform words (the same whether or not the address has an account).
    static func sent(_ delivery: String, session: String) -> ChallengeAnswer {
        delivery == "link"
            ? ChallengeAnswer(
                insufficient: session, expecting: ["user_id", "magic_token"],
                "If the address may sign in, a link was sent to it: send its userId and token as user_id and magic_token with the auth_session.")
            : ChallengeAnswer(
                insufficient: session, expecting: ["email_code"],
                "If the address may sign in or sign up, a six-digit code was sent to it: send it as email_code with the auth_session.")
    }

    /// The registration fields still wanted, by their parameter names (OpenID Connect's claim names).
    static func askingFor(_ missing: [String], session: String) -> ChallengeAnswer {
        ChallengeAnswer(
            insufficient: session, expecting: missing,
            "This realm asks for \(missing.joined(separator: " and ")) before it sends a code: send them with the auth_session.")
    }

    /// The names the realm requires that the request lacks (`EmailSignInService.missingNames`).
    static func missingNames(_ form: FormBody, _ realm: RealmDirectory.Entry) -> [String] {
        let given = names(form)
        return EmailSignInService.missingNames(firstName: given.given, lastName: given.family, realm.settings.registrationFields).map {
            $0 == .firstName ? "given_name" : "family_name"
        }
    }

    static func names(_ form: FormBody) -> (given: String?, family: String?) {
        (form["given_name"], form["family_name"])
    }

    static func link(_ form: FormBody) -> FirstPartyAuthorization.SessionState.HeldLink? {
        guard let userID = form["user_id"], let token = form["magic_token"] else { return nil }
        return .init(userID: userID, token: token)
    }
}
