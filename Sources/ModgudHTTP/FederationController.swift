import EventSourcing
import Hummingbird
import ModgudService

/// ID token exchanges (issue 48): `POST /connect/federation/nonce` → `{"nonce",
/// "nonce_sha256", "expires_in"}`. The app gives `nonce_sha256` to Sign in with Apple
/// (`ASAuthorizationAppleIDRequest.nonce`) or Google (`GetGoogleIdOption.Builder.setNonce`) and
/// sends `nonce` with the exchange; the ID token must carry the hash, and the nonce is spent
/// then (docs/guides/sign-in-with-apple-and-google.md).
///
/// `POST /connect/federation/apple/notifications`: Sign in with Apple's server-to-server
/// notifications (`AppleNotifications`), the URL a team registers for its Services ID. Body
/// `{"payload": "<JWS>"}` (members Apple may add are ignored: the body is Apple's, not a
/// client's); 200 `{"outcome"}` once applied or seen before, 400 with the refused check, 503
/// when Apple's keys cannot be fetched (Apple retries).
struct FederationController: Sendable {
    let federation: Federation?
    let federatedSignIn: @Sendable () throws -> FederatedSignIn
    let parsing: RequestParsing

    static let noncePath = "/connect/federation/nonce"
    static let appleNotificationsPath = "/connect/federation/apple/notifications"

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(Self.noncePath), use: nonce)
        router.post(RouterPath(Self.appleNotificationsPath), use: appleNotification)
    }

    struct NotificationBody: Decodable {
        var payload: String
    }

    struct OutcomeBody: Encodable {
        var outcome: String
        var type: String
    }

    func appleNotification(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, _) = try await parsing.realm(request)
            let body = try await parsing.json(NotificationBody.self, request, allowed: nil)
            do {
                let (outcome, event) = try await AppleNotifications(signIn: federatedSignIn()).receive(
                    body.payload, realm: realm.realmID, settings: realm.settings,
                    metadata: EventMetadata(correlationID: context.id, actor: "provider:apple", clientIP: context.peerAddress))
                return OAuthResponses.json(OutcomeBody(outcome: outcome.rawValue, type: event.type))
            } catch FederationError.refused(let reason, let detail) {
                return Problem.response("Federation.NotificationRefused", status: 400, detail: "\(reason): \(detail)")
            } catch FederationError.keysUnavailable(let detail) {
                return Problem.response("Federation.KeysUnavailable", status: 503, detail: "Apple's keys could not be fetched (\(detail)).")
            }
        }
    }

    struct NonceBody: Encodable {
        var nonce: String
        var nonce_sha256: String
        var expires_in: Int
    }

    func nonce(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            _ = try await parsing.realm(request)
            guard let federation else {
                return Problem.response("Federation.Unavailable", status: 503, detail: "This server cannot exchange ID tokens (no master key).")
            }
            let issued = federation.nonces.issue()
            var response = OAuthResponses.json(
                NonceBody(nonce: issued.nonce, nonce_sha256: IDTokenVerifier.nonceHash(issued.nonce), expires_in: issued.expiresIn))
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }
}
