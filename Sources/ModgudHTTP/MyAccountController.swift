import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Auth0's My Account API for passkeys (seed 002, issue 24): enrollment in two steps, and the
/// list, get, rename and delete of a user's authentication methods, mapped onto the passkey
/// aggregate and its enrollment rules (the same service calls as `/connect/passkey…`).
///
/// Authorised by a live access token whose audience is the My Account audience of the host
/// (`<issuer>/me/`, Auth0's `https://<domain>/me/`) and which carries the route's scope:
/// `create:`, `read:`, `update:` or `delete:me:authentication_methods`. A client gets them like
/// any audience and scope: listed in its `Audiences` and `AllowedScopes`, requested with
/// `audience` (or `resource`) and `scope`. With the realm's passkey step-up on (issue 65, off
/// by default), enrollment, rename and delete also need a fresh sign-in
/// (`PasskeyService.requirePasskeyStepUp`), unless the token carries `modgud:passkeys:enroll`.
/// Errors are problem documents (`application/problem+json`), as Auth0's My Account API answers,
/// 401, 403 and 429 included; members Auth0 does not define are ignored. Enrollment answers 202
/// with the method's `Location` (`…/passkey%7Cnew`), verification 201 with the new method's.
struct MyAccountController: Sendable {
    let passkeys: PasskeyService
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    let resource: ProtectedResource

    static let base = "/me/v1/authentication-methods"

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(Self.base), use: begin)
        // Auth0's path is `…/passkey|new/verify`; clients send the `|` as is or percent-encoded.
        router.post(RouterPath(Self.base + "/:id/verify"), use: verify)
        router.get(RouterPath(Self.base), use: list)
        router.get(RouterPath(Self.base + "/:id"), use: get)
        router.patch(RouterPath(Self.base + "/:id"), use: rename)
        router.delete(RouterPath(Self.base + "/:id"), use: delete)
    }

    // MARK: Bodies

    struct BeginBody: Decodable {
        var type: String
        var connection: String?
        var identity_user_id: String?
        /// The seed's sample names it `identity`.
        var identity: String?
    }

    struct BegunBody: Encodable {
        var authn_params_public_key: Auth0CeremonyOptions
        var auth_session: String
    }

    struct VerifyBody: Decodable {
        var auth_session: String
        var authn_response: [String: StrictJSON.AnyJSONValue]
        var name: String?
    }

    struct RenameBody: Decodable {
        var name: String
    }

    /// A passkey as Auth0's My Account API shows an authentication method of type `passkey`
    /// (its OpenAPI schema `AuthenticationMethodPasskey`): every member it documents, in its
    /// format. Auth0.swift 3.1.0 `PasskeyAuthenticationMethod.swift` requires `id`, `type`,
    /// `identity_user_id`, `created_at` (ISO 8601 with fractional seconds), `aaguid`,
    /// `relying_party_id`, `key_id`, `public_key` (standard base64), `user_handle` (base64url),
    /// `credential_device_type` (`single_device` or `multi_device`) and `credential_backed_up`;
    /// Auth0.Android 3.18.0 `AuthenticationMethod.kt` also `usage`. `name` and `provider` are
    /// Modgud's (the label the user gave it, and who holds it, from its AAGUID).
    struct MethodBody: Encodable {
        var id: String
        var type = "passkey"
        var created_at: String
        var last_auth_at: String?
        var usage = ["primary"]
        var identity_user_id: String
        var key_id: String
        var public_key: String
        var user_handle: String
        var credential_device_type: String
        var credential_backed_up: Bool
        var relying_party_id: String
        var transports: [String]
        var aaguid: String
        var name: String
        var provider: ProviderBody
    }

    struct ProviderBody: Encodable {
        var name: String
        var aaguid: String?
    }

    struct ListBody: Encodable {
        var authentication_methods: [MethodBody]
    }

    // MARK: Routes

    /// POST /me/v1/authentication-methods `{type: "passkey"}`: creation options and the session.
    func begin(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer, issuer) = try await authorized(request, scope: "create:me:authentication_methods")
            let body = try await parsing.json(BeginBody.self, request, allowed: nil)
            guard body.type == "passkey" else {
                return Problem.response("MyAccount.UnsupportedType", status: 400, detail: "Only passkeys can be enrolled here (type: passkey).")
            }
            if let connection = body.connection, !Auth0Compatibility.connections(of: realm).contains(connection) {
                return Problem.response("MyAccount.UnknownConnection", status: 400, detail: "Unknown connection \(connection).")
            }
            if let identity = body.identity_user_id ?? body.identity, identity.lowercased() != bearer.userID.uuidString.lowercased() {
                return Problem.response("MyAccount.UnknownIdentity", status: 400, detail: "Linked identities are not supported.")
            }
            try await rateLimiter.check(.passkeyPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            let begun = try await passkeys.beginEnrollment(
                realm: realm, userID: bearer.userID, clientID: bearer.clientID, metadata: context.eventMetadata(actor: bearer.userID))
            // 202 with the method id in `Location`, as Auth0 answers: Auth0.swift's
            // `PasskeyEnrollmentChallenge` and Auth0.Android's `passkeyEnrollmentChallenge` take
            // the id from the header's last path segment.
            var response = OAuthResponses.json(
                BegunBody(authn_params_public_key: Auth0CeremonyOptions(begun.options), auth_session: begun.ceremonyID.uuidString.lowercased()),
                status: .accepted)
            response.headers[.location] = Self.location(issuer: issuer, methodID: "passkey|new")
            return response
        }
    }

    /// POST /me/v1/authentication-methods/passkey|new/verify: 201 with the new method.
    func verify(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let method = context.parameters.get("id").map { $0.removingPercentEncoding ?? $0 }
            guard method == "passkey|new" else { return Self.notFound() }
            let (realm, bearer, issuer) = try await authorized(request, scope: "create:me:authentication_methods")
            try await rateLimiter.check(.passkeyPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            let body = try await parsing.json(VerifyBody.self, request, allowed: nil)
            let created = try await passkeys.completeEnrollment(
                realm: realm, userID: bearer.userID, clientID: bearer.clientID, ceremonyID: body.auth_session,
                attestation: try Self.attestation(body.authn_response), displayName: body.name,
                metadata: context.eventMetadata(actor: bearer.userID))
            let view = try Self.view(created)
            var response = OAuthResponses.json(view, status: .created)
            response.headers[.location] = Self.location(issuer: issuer, methodID: view.id)
            return response
        }
    }

    /// GET /me/v1/authentication-methods.
    func list(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer, _) = try await authorized(request, scope: "read:me:authentication_methods")
            let methods = try await passkeys.list(realm: realm.realmID, userID: bearer.userID, withCredentials: true).map { try Self.view($0) }
            return OAuthResponses.json(ListBody(authentication_methods: methods))
        }
    }

    /// GET /me/v1/authentication-methods/{id}: the method, or 404 (other users' ids included).
    func get(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer, _) = try await authorized(request, scope: "read:me:authentication_methods")
            guard let id = Self.passkeyID(context), let found = try await passkeys.get(realm: realm.realmID, userID: bearer.userID, passkeyID: id, withCredential: true)
            else { return Self.notFound() }
            return OAuthResponses.json(try Self.view(found))
        }
    }

    /// PATCH /me/v1/authentication-methods/{id} `{name}`.
    func rename(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer, _) = try await authorized(request, scope: "update:me:authentication_methods")
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            let body = try await parsing.json(RenameBody.self, request, allowed: nil)
            guard let id = Self.passkeyID(context),
                let renamed = try await passkeys.rename(
                    realm: realm.realmID, userID: bearer.userID, passkeyID: id, to: body.name, by: "user:\(bearer.userID.uuidString.lowercased())",
                    metadata: context.eventMetadata(actor: bearer.userID), withCredential: true)
            else { return Self.notFound() }
            return OAuthResponses.json(try Self.view(renamed))
        }
    }

    /// DELETE /me/v1/authentication-methods/{id}: 204, or 404.
    func delete(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, bearer, _) = try await authorized(request, scope: "delete:me:authentication_methods")
            try await passkeys.requirePasskeyStepUp(realm: realm, familyID: bearer.familyID, scopes: bearer.scopes)
            guard let id = Self.passkeyID(context),
                try await passkeys.delete(
                    realm: realm.realmID, userID: bearer.userID, passkeyID: id, by: "user:\(bearer.userID.uuidString.lowercased())",
                    metadata: context.eventMetadata(actor: bearer.userID))
            else { return Self.notFound() }
            return Response(status: .noContent)
        }
    }

    // MARK: Shared

    /// The realm (native grants on) and the bearer, whose token must be for the host's My
    /// Account audience (else 401 `invalid_token`) and carry `scope` (else 403
    /// `insufficient_scope`, RFC 6750 section 3.1).
    private func authorized(_ request: Request, scope: String) async throws -> (RealmDirectory.Entry, Caller, issuer: String) {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else { throw RequestParsing.Failure.response(ProblemEdge.nativeGrantsDisabled()) }
        return (realm, try await resource.myAccountCaller(request, realm: realm, issuer: issuer, scope: scope), issuer)
    }

    /// Where a method lives: `<base>/me/v1/authentication-methods/<id>`, the id's `|`
    /// percent-encoded as Auth0 writes it (`passkey%7Cnew`).
    static func location(issuer: String, methodID: String) -> String {
        RequestParsing.base(of: issuer) + base + "/" + methodID.replacingOccurrences(of: "|", with: "%7C")
    }

    /// The My Account audience of an issuer (`ProtectedResource.myAccountAudience`).
    static func audience(issuer: String) -> String {
        ProtectedResource.myAccountAudience(issuer: issuer)
    }

    /// `passkey|<uuid>` (Auth0's form, `|` possibly percent-encoded) or a bare passkey id.
    static func passkeyID(_ context: ModgudRequestContext) -> UUID? {
        guard var raw = context.parameters.get("id") else { return nil }
        raw = raw.removingPercentEncoding ?? raw
        if raw.hasPrefix("passkey|") { raw.removeFirst("passkey|".count) }
        return UUID(uuidString: raw)
    }

    /// Auth0's `authn_response` as the verifier reads it: the seed prints `clientDataJson`,
    /// WebAuthn names it `clientDataJSON`; both are accepted.
    static func attestation(_ response: [String: StrictJSON.AnyJSONValue]) throws -> [UInt8] {
        var credential = response
        if case .object(var inner)? = credential["response"], inner["clientDataJSON"] == nil, let spelled = inner["clientDataJson"] {
            inner["clientDataJSON"] = spelled
            inner["clientDataJson"] = nil
            credential["response"] = .object(inner)
        }
        return Array(try JSONEncoder().encode(credential))
    }

    /// A method as Auth0 shows it; the summary must carry its credential's facts (asked with
    /// `withCredential(s)`), else this is a server fault.
    static func view(_ summary: PasskeyService.Summary) throws -> MethodBody {
        // Auth0 writes timestamps with milliseconds (`2025-01-15T10:30:00.000Z`).
        let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let credential = summary.credential else { throw MissingCredentialFacts() }
        return MethodBody(
            id: "passkey|" + summary.id.uuidString.lowercased(), created_at: summary.createdAt.formatted(format),
            last_auth_at: summary.lastUsedAt?.formatted(format), identity_user_id: credential.userID.uuidString.lowercased(),
            key_id: credential.credentialID, public_key: Base64URLText.decode(credential.publicKey).map { Data($0).base64EncodedString() } ?? "",
            user_handle: Base64URLText.encode(credential.userHandle), credential_device_type: credential.backupEligible ? "multi_device" : "single_device",
            credential_backed_up: credential.backedUp, relying_party_id: summary.rpID, transports: credential.transports,
            aaguid: summary.provider.aaguid ?? "00000000-0000-0000-0000-000000000000", name: summary.displayName,
            provider: ProviderBody(name: summary.provider.name, aaguid: summary.provider.aaguid))
    }

    /// A summary without its credential's facts reached the My Account view.
    struct MissingCredentialFacts: Error {}

    static func notFound() -> Response {
        Problem.response("MyAccount.NotFound", status: 404, detail: "No such authentication method.")
    }

    /// Every error a problem, as Auth0's My Account API answers (its `ErrorResponse` schema:
    /// `type`, `status`, `title`, `detail`): bearer challenges and 429s included.
    private func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            do {
                return try await body()
            } catch RequestParsing.Failure.response(let response) where [.unauthorized, .forbidden].contains(response.status)
                && response.headers[.contentType] == nil
            {
                return Auth0ErrorResponses.myAccountChallenge(response)
            } catch let limited as RateLimited {
                return Auth0ErrorResponses.myAccountRateLimited(limited)
            }
        }
    }
}
