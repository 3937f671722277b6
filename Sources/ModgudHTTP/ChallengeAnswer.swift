import Hummingbird
import ModgudService

/// An Authorization Challenge Endpoint answer other than a code
/// (draft-ietf-oauth-first-party-apps section 5.2.2): `error`, `error_description` and, for
/// `insufficient_authorization`, the `auth_session` to continue with; 403 for
/// `insufficient_authorization` and `redirect_to_web` (as draft -04 sets them), 400
/// otherwise. What the app must collect next is in `expecting` (Modgud's member:
/// `email_code`, `totp_code`, `passkey_assertion`) and, for a passkey, `passkey_options`
/// (WebAuthn request options, as `/connect/passkey/begin` gives them). Rendered by the
/// controller.
struct ChallengeAnswer {
    var body: Body

    struct Body: Encodable {
        var error: String
        var errorDescription: String
        var authSession: String?
        var expecting: [String]?
        var passkeyOptions: CeremonyOptions?
        /// `redirect_to_web` only: the realm's web sign-in (`WebFallbackURL`), Modgud's member.
        var webURI: String?

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
            case authSession = "auth_session"
            case expecting
            case passkeyOptions = "passkey_options"
            case webURI = "web_uri"
        }
    }

    init(error: String, _ description: String) {
        body = Body(error: error, errorDescription: description)
    }

    init(insufficient session: String, expecting: [String], passkeyOptions: CeremonyOptions? = nil, _ description: String) {
        body = Body(
            error: "insufficient_authorization", errorDescription: description, authSession: session, expecting: expecting, passkeyOptions: passkeyOptions)
    }

    /// `FirstPartySignIn`'s refusals (section 5.2.2).
    init(_ refusal: FirstPartyRefusal) {
        body = Body(error: refusal.code.rawValue, errorDescription: refusal.description)
        body.webURI = refusal.webURI
    }

    /// RFC 9449 sections 5 and 8, as the token endpoint answers them.
    init(_ refusal: DPoPError) {
        switch refusal {
        case .useNonce(let detail): self.init(error: "use_dpop_nonce", detail)
        case .invalid(let detail): self.init(error: "invalid_dpop_proof", "The DPoP proof is invalid: \(detail).")
        case .replayed: self.init(error: "invalid_dpop_proof", "The DPoP proof was used before.")
        }
    }

    var response: Response {
        OAuthResponses.json(body, status: Self.forbidden.contains(body.error) ? .forbidden : .badRequest)
    }

    /// The errors draft -04 answers with 403 Forbidden (section 5.2.2); the rest are 400.
    static let forbidden: Set<String> = ["insufficient_authorization", "redirect_to_web"]
}
