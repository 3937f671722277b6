import Hummingbird
import ModgudService

/// ID token exchanges (issue 48): `POST /connect/federation/nonce` → `{"nonce",
/// "nonce_sha256", "expires_in"}`. The app gives `nonce_sha256` to Sign in with Apple
/// (`ASAuthorizationAppleIDRequest.nonce`) or Google (`GetGoogleIdOption.Builder.setNonce`) and
/// sends `nonce` with the exchange; the ID token must carry the hash, and the nonce is spent
/// then (docs/guides/sign-in-with-apple-and-google.md).
struct FederationController: Sendable {
    let federation: Federation?
    let parsing: RequestParsing

    static let noncePath = "/connect/federation/nonce"

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(Self.noncePath), use: nonce)
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
