import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The passkey endpoints (docs/spec.md section 4): begin (anonymous), enrollment (Bearer, a fresh
/// sign-in: issue 14), list, get, rename and delete (Bearer). The grant itself is in
/// `TokenController`.
struct PasskeyController: Sendable {
    let passkeys: PasskeyService
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    let resource: ProtectedResource
    /// Genuine apps (issue 47): checked before a ceremony is stored.
    let attestation: ClientAttestationGate

    struct BegunBody: Encodable {
        var ceremonyId: String
        var options: CeremonyOptions
        /// `conditional` for an automatic upgrade (the `mediation` of `navigator.credentials.create`).
        var mediation: String? = nil
    }

    struct PasskeyBody: Encodable {
        var Id: String
        var DisplayName: String
        var CreatedAt: String
        var LastUsedAt: String?
        var Provider: ProviderBody
    }

    /// Who holds the passkey, from its AAGUID (`PasskeyProviders`).
    struct ProviderBody: Encodable {
        var Name: String
        var Aaguid: String?
        var IconLight: String?
        var IconDark: String?
    }

    /// The rename body.
    struct RenameBody: Decodable {
        var DisplayName: String
        static let members: Set<String> = ["DisplayName"]
    }

    func register(on router: Router<ModgudRequestContext>) {
        router.post("/connect/passkey/begin", use: begin)
        router.post("/connect/passkey/register/begin", use: signUpBegin)
        router.post("/connect/passkey/enroll/begin", use: enrollBegin)
        router.post("/connect/passkey/enroll", use: enroll)
        router.get("/connect/passkey", use: list)
        router.get("/connect/passkey/signals", use: signals)
        router.get("/connect/passkey/:id", use: get)
        router.patch("/connect/passkey/:id", use: rename)
        router.delete("/connect/passkey/:id", use: delete)
    }

    /// POST /connect/passkey/begin (form, optional client_id).
    func begin(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            guard realm.settings.nativeGrants.enabled else { return ProblemEdge.nativeGrantsDisabled() }
            try await rateLimiter.check(.passkeyPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            let form = try await parsing.form(request)
            // The ceremony is the named client's (client_id, or the attestation's) and its
            // attested instance's (issue 65).
            let binding = try await attestation.binding(
                request, clientID: form["client_id"], realm: realm.realmID, issuer: issuer, endpoint: "passkey_begin")
            let begun = try await passkeys.beginLogin(realm: realm, binding: binding, metadata: context.eventMetadata())
            return OAuthResponses.json(BegunBody(ceremonyId: begun.ceremonyID.uuidString.lowercased(), options: begun.options))
        }
    }

    /// The sign-up body (issue 14).
    struct SignUpBody: Decodable {
        var ClientId: String
        var Email: String
        var FirstName: String?
        var LastName: String?
        var DisplayName: String?
        static let members: Set<String> = ["ClientId", "Email", "FirstName", "LastName", "DisplayName"]
    }

    /// POST /connect/passkey/register/begin (anonymous, JSON): creation options for a new
    /// account, the same whatever the address. The token endpoint redeems the ceremony with
    /// `attestation`. 403 `Passkey.SignUpNotAllowed` / `Passkey.SignUpDisabled` when the client
    /// or realm does not allow sign-up; 429 past the passkey or sign-up limit per source.
    func signUpBegin(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer) = try await parsing.realm(request)
            guard realm.settings.nativeGrants.enabled else { return ProblemEdge.nativeGrantsDisabled() }
            let body = try await parsing.json(SignUpBody.self, request, allowed: SignUpBody.members, ignoringCase: true)
            let binding = try await attestation.binding(request, clientID: body.ClientId, realm: realm.realmID, issuer: issuer, endpoint: "passkey_register")
            let source = parsing.source(request, context: context)
            try await rateLimiter.check(.passkeyPerIP, key: source, realm: realm.realmID, settings: realm.settings)
            try await rateLimiter.check(.signupPerIP, key: source, realm: realm.realmID, settings: realm.settings)
            let begun = try await passkeys.beginSignUp(
                realm: realm, binding: binding,
                .init(email: body.Email, firstName: body.FirstName, lastName: body.LastName, displayName: body.DisplayName),
                metadata: context.eventMetadata())
            return OAuthResponses.json(BegunBody(ceremonyId: begun.ceremonyID.uuidString.lowercased(), options: begun.options))
        }
    }

    /// POST /connect/passkey/enroll/begin (Bearer).
    func enrollBegin(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request, allowsRecovery: true)
            try await rateLimiter.check(.passkeyPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            // Issue 46: `?mediation=conditional` begins an automatic upgrade (conditional create).
            let conditional: Bool
            switch request.uri.queryParameters["mediation"].map(String.init) {
            case nil: conditional = false
            case "conditional": conditional = true
            default: return ServiceRefusal.invalid("Passkey.InvalidRequest", "mediation is conditional or absent.").problem
            }
            if conditional {
                try await passkeys.requireUpgradeSignIn(realm: realm, familyID: bearer.familyID)
            } else {
                try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            }
            let begun = try await passkeys.beginEnrollment(
                realm: realm, userID: bearer.userID, clientID: bearer.clientID, conditional: conditional,
                metadata: context.eventMetadata(actor: bearer.userID))
            return OAuthResponses.json(
                BegunBody(ceremonyId: begun.ceremonyID.uuidString.lowercased(), options: begun.options, mediation: conditional ? "conditional" : nil))
        }
    }

    /// The enrollment body: the seed's `ceremonyId` and `attestation`, and `DisplayName`.
    struct EnrollBody: Decodable {
        var ceremonyId: String
        var attestation: RawJSON
        var DisplayName: String?
        static let members: Set<String> = ["ceremonyId", "attestation", "DisplayName"]
    }

    /// POST /connect/passkey/enroll (Bearer, JSON).
    func enroll(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request, allowsRecovery: true)
            try await rateLimiter.check(.passkeyPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            let body: EnrollBody
            do {
                body = try await parsing.json(EnrollBody.self, request, allowed: EnrollBody.members, ignoringCase: true)
            } catch RequestParsing.Failure.response(let response) where response.status != .contentTooLarge && response.status != .unsupportedMediaType {
                // docs/spec.md section 4: a malformed enrollment body is the passkey refusal, not the generic one.
                return ServiceRefusal.invalid("Passkey.InvalidRequest", "Invalid request.").problem
            }
            let created = try await passkeys.completeEnrollment(
                realm: realm, userID: bearer.userID, clientID: bearer.clientID, ceremonyID: body.ceremonyId, attestation: body.attestation.bytes,
                displayName: body.DisplayName, metadata: context.eventMetadata(actor: bearer.userID))
            return OAuthResponses.json(Self.view(created))
        }
    }

    /// One RP-ID's signals, in the WebAuthn Signal API's member names (issue 46).
    struct SignalsBody: Encodable {
        var rpId: String
        var userId: String
        var allAcceptedCredentialIds: [String]
        var name: String
        var displayName: String
    }

    /// GET /connect/passkey/signals (Bearer): what the app passes to
    /// `signalAllAcceptedCredentials` and `signalCurrentUserDetails`, per RP-ID.
    func signals(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request)
            let signals = try await passkeys.signals(realm: realm, userID: bearer.userID, clientID: bearer.clientID)
            return OAuthResponses.json(
                signals.map {
                    SignalsBody(rpId: $0.rpID, userId: $0.userHandle, allAcceptedCredentialIds: $0.acceptedCredentialIDs, name: $0.name, displayName: $0.displayName)
                })
        }
    }

    /// GET /connect/passkey (Bearer).
    func list(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request)
            return OAuthResponses.json(try await passkeys.list(realm: realm.realmID, userID: bearer.userID).map(Self.view))
        }
    }

    /// GET /connect/passkey/{id} (Bearer): one passkey, or 404 for unknown and other users' ids.
    func get(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                let found = try await passkeys.get(realm: realm.realmID, userID: bearer.userID, passkeyID: id)
            else { return Problem.response("Passkey.NotFound", status: 404, detail: "No such passkey.") }
            return OAuthResponses.json(Self.view(found))
        }
    }

    /// PATCH /connect/passkey/{id} (Bearer, JSON `{ "DisplayName" }`): the renamed passkey, 400
    /// `Passkey.InvalidName`, or 404 for unknown and other users' ids (never 403). The realm's
    /// passkey step-up, when on, as for enrollment and delete (issue 65).
    func rename(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request)
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            let body = try await parsing.json(RenameBody.self, request, allowed: RenameBody.members, ignoringCase: true)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                let renamed = try await passkeys.rename(
                    realm: realm.realmID, userID: bearer.userID, passkeyID: id, to: body.DisplayName, by: "user:\(bearer.userID.uuidString.lowercased())",
                    metadata: context.eventMetadata(actor: bearer.userID))
            else { return Problem.response("Passkey.NotFound", status: 404, detail: "No such passkey.") }
            return OAuthResponses.json(Self.view(renamed))
        }
    }

    /// DELETE /connect/passkey/{id} (Bearer): 204, or 404 for unknown and other users' ids.
    /// With the realm's passkey step-up on (issue 65; off by default, as the guide promises 204
    /// for any valid token), a fresh sign-in as enrolling (RFC 9470's 401 with `max_age`).
    func delete(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer) = try await authorized(request)
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                try await passkeys.delete(
                    realm: realm.realmID, userID: bearer.userID, passkeyID: id, by: "user:\(bearer.userID.uuidString.lowercased())",
                    metadata: context.eventMetadata(actor: bearer.userID))
            else { return Problem.response("Passkey.NotFound", status: 404, detail: "No such passkey.") }
            return Response(status: .noContent)
        }
    }

    // MARK: Shared

    /// Realm flag first (400 `NativeGrants.Disabled`), then the access token, Bearer or DPoP,
    /// for the app or My Account (401, `ProtectedResource.accountCaller`). Only enrollment
    /// takes a recovery session's token (issue 46).
    private func authorized(_ request: Request, allowsRecovery: Bool = false) async throws -> (RealmDirectory.Entry, Caller) {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else { throw RequestParsing.Failure.response(ProblemEdge.nativeGrantsDisabled()) }
        return (realm, try await resource.accountCaller(request, realm: realm, issuer: issuer, allowsRecovery: allowsRecovery))
    }

    static func view(_ summary: PasskeyService.Summary) -> PasskeyBody {
        let format = Date.ISO8601FormatStyle()
        return PasskeyBody(
            Id: summary.id.uuidString.lowercased(), DisplayName: summary.displayName, CreatedAt: summary.createdAt.formatted(format),
            LastUsedAt: summary.lastUsedAt?.formatted(format),
            Provider: ProviderBody(
                Name: summary.provider.name, Aaguid: summary.provider.aaguid, IconLight: summary.provider.iconLight,
                IconDark: summary.provider.iconDark))
    }

    private func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        await ProblemEdge.respondWithProblems(context, body)
    }
}

/// A JSON value kept as its bytes (the attestation is handed to the WebAuthn parser whole).
struct RawJSON: Decodable {
    let bytes: [UInt8]

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(StrictJSON.AnyJSONValue.self)
        bytes = Array(try JSONEncoder().encode(value))
    }
}
