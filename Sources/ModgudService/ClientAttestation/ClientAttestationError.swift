/// A refused client attestation, as draft-ietf-oauth-attestation-based-client-auth-10 section
/// 7.4 names the errors (`invalid_client_attestation`, `use_attestation_challenge`,
/// `use_fresh_attestation`). Every case is answered before the request does anything.
public enum ClientAttestationError: Error, Equatable, Sendable {
    /// The headers are missing where the client requires them, malformed, or do not verify.
    case invalid(String)
    /// The proof of possession must carry a fresh challenge (its `iat` is too far off, or its
    /// challenge is stale): answered with a new one in `OAuth-Client-Attestation-Challenge`.
    case useChallenge(String)
    /// The Client Attestation JWT has expired: the app asks the attester for a new one.
    case useFresh(String)

    /// The draft's error code.
    public var code: String {
        switch self {
        case .invalid: "invalid_client_attestation"
        case .useChallenge: "use_attestation_challenge"
        case .useFresh: "use_fresh_attestation"
        }
    }

    public var detail: String {
        switch self {
        case .invalid(let text), .useChallenge(let text), .useFresh(let text): text
        }
    }
}
