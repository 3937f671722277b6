/// Where the client attester lives (issue 47): its routes, and the challenge endpoint
/// discovery publishes as `challenge_endpoint` (draft-ietf-oauth-attestation-based-client-auth-10 section 6.1).
enum ClientAttestationPaths {
    static let base = "/connect/attestation"
    static let challenge = base + "/challenge"
}
