import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Auth0's passwordless email API (issue 24): `POST /passwordless/start` sends a one-time
/// code (`send: code`) or a magic link (`send: link`, Auth0's default). The same service calls
/// as `/api/account/native/otp/request` and `/api/account/magic-link/request` (`link_ios` and
/// `link_android` send the same link as `link`): the realm's
/// posture, registration fields and rate limits apply alike, and the answer is the same
/// whether or not the address has an account (the jitter included). Requests and errors have
/// Auth0's shapes: JSON or a form; `{ "error", "error_description" }` with Auth0's codes
/// (`bad.connection`, `bad.email`, `bad.send`, `unauthorized_client`). Members Auth0 accepts
/// and Modgud has no use for (`authParams`, telemetry) are ignored.
struct Auth0PasswordlessController: Sendable {
    let clients: ClientAuthenticator
    let emailSignIn: @Sendable () throws -> EmailSignInService
    let parsing: RequestParsing
    /// Genuine apps (issue 47): checked before any mail is queued.
    let attestation: ClientAttestationGate

    /// Auth0's answer: a request id, the address as given, never whether it has an account.
    struct StartedBody: Encodable {
        var _id: String
        var email: String
        var email_verified: Bool
    }

    struct ErrorBody: Encodable {
        var error: String
        var error_description: String
    }

    func register(on router: Router<ModgudRequestContext>) {
        router.post("/passwordless/start", use: start)
    }

    /// POST /passwordless/start.
    func start(_ request: Request, context: ModgudRequestContext) async -> Response {
        let started = ContinuousClock.now
        return await Auth0ErrorResponses.respond(context, endpoint: "passwordless") {
            do {
                return try await send(request, context: context, started: started)
            } catch let refusal as Refusal {
                return OAuthResponses.json(ErrorBody(error: refusal.code, error_description: refusal.message), status: refusal.status)
            } catch is EmailSignInService.InvalidEmailAddress {
                return OAuthResponses.json(ErrorBody(error: "bad.email", error_description: "Invalid email"), status: .badRequest)
            } catch let refused as EmailSignInService.RequestRefused {
                return OAuthResponses.json(ErrorBody(error: "bad.request", error_description: refused.message), status: .badRequest)
            }
        }
    }

    /// Auth0's error codes for this endpoint.
    struct Refusal: Error {
        var code: String
        var message: String
        var status: HTTPResponse.Status = .badRequest
    }

    private func send(_ request: Request, context: ModgudRequestContext, started: ContinuousClock.Instant) async throws -> Response {
        let (realm, issuer) = try await parsing.realm(request)
        let form = try await parsing.tokenParameters(request)
        guard form["client_id"] != nil || request.headers[.authorization] != nil else {
            throw Refusal(code: "bad.client_id", message: "Missing required property: client_id")
        }
        let (id, secret) = try parsing.clientCredentials(request, form)
        let client = try await clients.authenticate(realm: realm.realmID, clientID: id, secret: secret)
        let attested = try await attestation.check(
            request, clientID: client.id, settings: client.settings, realm: realm.realmID, issuer: issuer, endpoint: "auth0_passwordless_start")
        // What is sent is this client's and its attested instance's alone (issue 65).
        let binding = FlowBinding(clientID: client.id, attestedKey: attested?.jkt)
        // Auth0's passwordless connection is `email`; SMS is not offered.
        guard let connection = form["connection"] else { throw Refusal(code: "bad.connection", message: "Missing required property: connection") }
        guard connection == "email" else { throw Refusal(code: "bad.connection", message: "Connection does not exist") }
        guard realm.settings.nativeGrants.enabled else { throw Refusal(code: "bad.connection", message: "Connection is disabled") }
        let sendsLink: Bool
        switch form["send"] ?? "link" {
        case "code": sendsLink = false
        // Auth0's native variants send the same link: the app opens it as a universal link
        // (iOS) or an app link (Android), which `/magic-login` serves on the realm's host.
        case "link", "link_ios", "link_android": sendsLink = true
        default: throw Refusal(code: "bad.send", message: "Invalid send value, must be 'code', 'link', 'link_ios' or 'link_android'")
        }
        let permission: GrantType = sendsLink ? .magic : .otp
        guard client.settings.grants.contains(permission) else {
            let grant = sendsLink ? "urn:cocoar:magic" : Auth0Compatibility.passwordlessOTPGrant
            throw Refusal(code: "unauthorized_client", message: "Grant type '\(grant)' not allowed for the client.", status: .forbidden)
        }
        guard let email = form["email"] else { throw Refusal(code: "bad.email", message: "Missing required property: email") }
        let source = parsing.source(request, context: context)
        if sendsLink {
            guard realm.settings.magicLinksOn else { throw Refusal(code: "bad.send", message: "Magic links are not enabled for this realm.") }
            try await emailSignIn().requestMagicLink(
                email: email, source: source, realm: realm, issuer: issuer, binding: binding, metadata: context.eventMetadata())
        } else {
            try await emailSignIn().requestCode(
                .init(email: email, source: source), endpoint: .otpRequest, realm: realm, binding: binding, metadata: context.eventMetadata())
        }
        await parsing.configuration.jitter.wait(since: started)
        let requestID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(24)
        return OAuthResponses.json(StartedBody(_id: String(requestID), email: email, email_verified: false))
    }
}
