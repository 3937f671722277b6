import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Auth0's Native Passkeys API endpoints (seed 002, issue 14): `POST /passkey/register`
/// (sign-up challenge) and `POST /passkey/challenge` (login challenge), with Auth0's request
/// and response shapes and OAuth-style errors (`{ "error", "error_description" }`). The token
/// endpoint redeems both (`Auth0Compatibility`).
struct Auth0PasskeyController: Sendable {
    let passkeys: PasskeyService
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    /// Genuine apps (issue 47): checked before a ceremony is stored.
    let attestation: ClientAttestationGate

    struct RegisterBody: Decodable {
        var client_id: String
        var realm: String?
        var user_profile: [String: StrictJSON.AnyJSONValue]
    }

    struct ChallengeBody: Decodable {
        var client_id: String
        var realm: String?
    }

    struct BegunBody: Encodable {
        var authn_params_public_key: Auth0CeremonyOptions
        var auth_session: String
    }

    func register(on router: Router<ModgudRequestContext>) {
        router.post("/passkey/register", use: signUp)
        router.post("/passkey/challenge", use: challenge)
    }

    /// POST /passkey/register: creation options for a new account and the session to redeem.
    func signUp(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let realm = try await enabledRealm(request)
            let body = try await decode(RegisterBody.self, request)
            try Auth0Compatibility.checkRealm(body.realm, realm: realm)
            let signUp = try Auth0Compatibility.signUpRequest(body.user_profile)
            try await checkLimits(request, context: context, realm: realm, signUp: true)
            let binding = try await attestation.binding(
                request, clientID: body.client_id, realm: realm.realmID, issuer: try await parsing.realm(request).issuer, endpoint: "auth0_passkey_register")
            let begun = try await passkeys.beginSignUp(realm: realm, binding: binding, signUp, metadata: context.eventMetadata())
            return OAuthResponses.json(BegunBody(authn_params_public_key: Auth0CeremonyOptions(begun.options), auth_session: begun.ceremonyID.uuidString.lowercased()))
        }
    }

    /// POST /passkey/challenge: request options for a usernameless login.
    func challenge(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let realm = try await enabledRealm(request)
            let body = try await decode(ChallengeBody.self, request)
            try Auth0Compatibility.checkRealm(body.realm, realm: realm)
            try await checkLimits(request, context: context, realm: realm, signUp: false)
            let binding = try await attestation.binding(
                request, clientID: body.client_id, realm: realm.realmID, issuer: try await parsing.realm(request).issuer, endpoint: "auth0_passkey_challenge")
            let begun = try await passkeys.beginLogin(realm: realm, binding: binding, metadata: context.eventMetadata())
            return OAuthResponses.json(BegunBody(authn_params_public_key: Auth0CeremonyOptions(begun.options), auth_session: begun.ceremonyID.uuidString.lowercased()))
        }
    }

    // MARK: Shared

    private func enabledRealm(_ request: Request) async throws -> RealmDirectory.Entry {
        let (realm, _) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else {
            throw ServiceRefusal.forbidden("NativeGrants.Disabled", "Native passwordless grants are not enabled for this realm.")
        }
        return realm
    }

    private func checkLimits(_ request: Request, context: ModgudRequestContext, realm: RealmDirectory.Entry, signUp: Bool) async throws {
        let source = parsing.source(request, context: context)
        try await rateLimiter.check(.passkeyPerIP, key: source, realm: realm.realmID, settings: realm.settings)
        if signUp { try await rateLimiter.check(.signupPerIP, key: source, realm: realm.realmID, settings: realm.settings) }
    }

    /// A JSON body, its errors in OAuth's shape. Members Auth0 does not define are ignored, as
    /// Auth0 ignores them (its SDKs add their own, issue 24); NUL and malformed JSON are refused.
    private func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        try await parsing.strictJSON(T.self, request, allowed: nil) { failure in
            let error: OAuthError =
                switch failure {
                case .unsupportedMediaType: .invalidRequest("The request body must be application/json.")
                case .tooLarge: .invalidRequest("The request body is too large.")
                case .decoding(.malformed): .invalidRequest("The request body is not a JSON object of the expected shape.")
                case .decoding(.unknownMember(let name)): .invalidRequest("Unknown member \(name).")
                case .decoding(.invalid(let detail)): .invalidRequest(detail)
                case .decoding(.nulCharacter): .invalidRequest("Text must not contain NUL characters.")
                }
            if case .tooLarge = failure { return OAuthResponses.error(error, status: .contentTooLarge) }
            return OAuthResponses.error(error)
        }
    }

    private func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        await Auth0ErrorResponses.respond(context, endpoint: "passkey", body)
    }
}
