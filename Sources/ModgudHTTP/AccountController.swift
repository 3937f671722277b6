import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Modgud's own account endpoints for native apps (docs/spec.md sections 2, 3 and 6): code and
/// link requests, app info, and TOTP enrollment. JSON is PascalCase.
struct AccountController: Sendable {
    /// Email codes and links, and TOTP enrollment (they need the master key: they throw without it).
    let emailSignIn: @Sendable () throws -> EmailSignInService
    let totpEnrollment: @Sendable () throws -> TOTPEnrollment
    let tokens: TokenService
    let resource: ProtectedResource
    let parsing: RequestParsing
    /// Genuine apps (issue 47): checked before any mail is queued.
    let attestation: ClientAttestationGate

    /// `ClientId` is optional (the seed's body has none): an app names itself, or is named by its
    /// attestation (issue 47); the code is then that client's and attested instance's alone
    /// (issue 65). A body without one asks for a code any client not requiring attestation may
    /// redeem.
    struct CodeRequestBody: Decodable {
        var Email: String
        var FirstName: String?
        var LastName: String?
        var ClientId: String?
        static let members: Set<String> = ["Email", "FirstName", "LastName", "ClientId"]
    }

    struct MagicLinkRequestBody: Decodable {
        var Email: String
        var ClientId: String?
        static let members: Set<String> = ["Email", "ClientId"]
    }

    struct MessageBody: Encodable {
        var Message: String
    }

    struct FieldErrorBody: Encodable {
        var error: String
    }

    static let codeMessage = "If your email is registered, you will receive a verification code."
    static let linkMessage = "If your email is registered, you will receive a login link."

    func register(on router: Router<ModgudRequestContext>) {
        router.post("/api/account/native/otp/request") { request, context in
            await codeRequest(request, context: context, endpoint: .otpRequest)
        }
        router.post("/api/account/native/register") { request, context in
            await codeRequest(request, context: context, endpoint: .register)
        }
        router.post("/api/account/magic-link/request", use: magicLinkRequest)
        router.get("/api/app-info", use: appInfo)
        router.post("/api/account/totp/enroll", use: totpBegin)
        router.post("/api/account/totp/confirm", use: totpConfirm)
        router.post("/api/account/email/confirm/request", use: emailConfirmRequest)
        router.post("/api/account/email/confirm", use: emailConfirm)
    }

    /// POST /api/account/native/otp/request and /register: steps 1–4 of docs/spec.md section 2.
    func codeRequest(_ request: Request, context: ModgudRequestContext, endpoint: EmailSignInService.CodeEndpoint) async -> Response {
        let started = ContinuousClock.now
        return await ProblemEdge.respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            guard realm.settings.nativeGrants.enabled else { return ProblemEdge.nativeGrantsDisabled() }
            let body = try await parsing.json(CodeRequestBody.self, request, allowed: CodeRequestBody.members, ignoringCase: true)
            let binding = try await attestation.binding(
                request, clientID: body.ClientId, realm: realm.realmID, issuer: issuer, endpoint: endpoint == .register ? "register" : "otp_request")
            do {
                try await emailSignIn().requestCode(
                    .init(email: body.Email, firstName: body.FirstName, lastName: body.LastName, source: parsing.source(request, context: context)),
                    endpoint: endpoint, realm: realm, binding: binding, metadata: context.eventMetadata())
            } catch let refused as EmailSignInService.RequestRefused {
                return OAuthResponses.json(FieldErrorBody(error: refused.message), status: .badRequest)
            }
            await parsing.configuration.jitter.wait(since: started)
            return OAuthResponses.json(MessageBody(Message: Self.codeMessage))
        }
    }

    /// POST /api/account/magic-link/request (docs/spec.md section 3).
    func magicLinkRequest(_ request: Request, context: ModgudRequestContext) async -> Response {
        let started = ContinuousClock.now
        return await ProblemEdge.respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            guard realm.settings.nativeGrants.enabled else { return ProblemEdge.nativeGrantsDisabled() }
            // docs/spec.md section 3: realm configuration, not a per-email signal, so it may say so
            // (answering "you will receive a link" and sending none is the seed's dead end).
            guard realm.settings.magicLinksOn else {
                return Problem.response("MagicLink.Disabled", status: 400, detail: "Magic links are not enabled for this realm.")
            }
            let body = try await parsing.json(MagicLinkRequestBody.self, request, allowed: MagicLinkRequestBody.members, ignoringCase: true)
            let binding = try await attestation.binding(
                request, clientID: body.ClientId, realm: realm.realmID, issuer: issuer, endpoint: "magic_link_request")
            try await emailSignIn().requestMagicLink(
                email: body.Email, source: parsing.source(request, context: context), realm: realm, issuer: issuer, binding: binding,
                metadata: context.eventMetadata())
            await parsing.configuration.jitter.wait(since: started)
            return OAuthResponses.json(MessageBody(Message: Self.linkMessage))
        }
    }

    struct AppInfoBody: Encodable {
        var RegistrationFields: [String: String]
        var MagicLinkSelfService: Bool
        var NativeGrantsEnabled: Bool
        var DisplayName: String
        var RegistrationPosture: String
    }

    /// GET /api/app-info (docs/spec.md section 6): what the app's sign-in screen should ask for.
    func appInfo(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respond(context) {
            let (realm, _) = try await parsing.realm(request)
            let settings = realm.settings
            let fields = settings.registrationFields
            return OAuthResponses.json(
                AppInfoBody(
                    RegistrationFields: [
                        "Email": "Required", "Username": fields.username.rawValue, "Firstname": fields.firstname.rawValue,
                        "Lastname": fields.lastname.rawValue,
                    ], MagicLinkSelfService: settings.magicLinksOn, NativeGrantsEnabled: settings.nativeGrants.enabled,
                    DisplayName: settings.displayName, RegistrationPosture: settings.registrationPosture.rawValue))
        }
    }

    struct TOTPEnrollmentBody: Encodable {
        var OtpauthUri: String
        var Secret: String
    }

    struct TOTPConfirmBody: Decodable {
        var Code: String
        static let members: Set<String> = ["Code"]
    }

    /// POST /api/account/totp/enroll (bearer): a new pending TOTP secret and its otpauth:// URI.
    func totpBegin(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, issuer) = try await parsing.realm(request)
            let userID = try await caller(request, realm: realm, issuer: issuer).userID
            let provisioning = try await totpEnrollment().begin(
                realm: realm.realmID, userID: userID, issuer: realm.settings.displayName.isEmpty ? issuer : realm.settings.displayName,
                metadata: context.eventMetadata(actor: userID))
            return OAuthResponses.json(TOTPEnrollmentBody(OtpauthUri: provisioning.uri, Secret: provisioning.secret))
        }
    }

    /// POST /api/account/totp/confirm (bearer) `{ "Code" }`: turns TOTP on (204).
    func totpConfirm(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, issuer) = try await parsing.realm(request)
            let userID = try await caller(request, realm: realm, issuer: issuer).userID
            let body = try await parsing.json(TOTPConfirmBody.self, request, allowed: TOTPConfirmBody.members, ignoringCase: true)
            try await totpEnrollment().confirm(realm: realm.realmID, userID: userID, code: body.Code, metadata: context.eventMetadata(actor: userID))
            return Response(status: .noContent)
        }
    }

    struct EmailConfirmationBody: Encodable {
        var EmailConfirmed: Bool
    }

    /// POST /api/account/email/confirm/request (bearer): sends a code to the account's address
    /// (202), or answers 200 `{ "EmailConfirmed": true }` when it is confirmed already.
    func emailConfirmRequest(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            let caller = try await caller(request, realm: realm, issuer: issuer)
            let userID = caller.userID
            let outcome = try await emailSignIn().requestConfirmation(
                realm: realm, userID: userID, source: parsing.source(request, context: context), metadata: context.eventMetadata(actor: userID))
            if outcome == .accountCannotSignIn {
                return ProtectedResource.challenge("invalid_token", scheme: caller.scheme)  // the account stopped signing in meanwhile
            }
            return OAuthResponses.json(EmailConfirmationBody(EmailConfirmed: outcome == .alreadyConfirmed), status: outcome == .sent ? .accepted : .ok)
        }
    }

    /// POST /api/account/email/confirm (bearer) `{ "Code" }`: 200 `{ "EmailConfirmed": true }`,
    /// or 400 `Email.InvalidCode` for a wrong, expired, burned or used code.
    func emailConfirm(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            let userID = try await caller(request, realm: realm, issuer: issuer).userID
            let body = try await parsing.json(TOTPConfirmBody.self, request, allowed: TOTPConfirmBody.members, ignoringCase: true)
            guard try await emailSignIn().confirm(realm: realm.realmID, userID: userID, code: body.Code, metadata: context.eventMetadata(actor: userID))
            else { return Problem.response("Email.InvalidCode", status: 400, detail: "Invalid or expired code.") }
            return OAuthResponses.json(EmailConfirmationBody(EmailConfirmed: true))
        }
    }

    // MARK: Shared

    /// The caller behind the request's access token (Bearer or DPoP), for the app or My
    /// Account (`ProtectedResource.accountCaller`), or a 401 challenge.
    func caller(_ request: Request, realm: RealmDirectory.Entry, issuer: String) async throws -> Caller {
        try await resource.accountCaller(request, realm: realm, issuer: issuer)
    }
}
