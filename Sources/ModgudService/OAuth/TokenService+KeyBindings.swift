import ModgudDomain

extension TokenService {
    /// The keys a refresh must present because its family was bound to them at sign-in; each
    /// refusal comes before anything is spent, so a stolen token without its key cannot
    /// revoke the session either.
    static func checkKeyBindings(of started: TokenFamilyStarted, dpopKey: String?, attestation: ClientAttestationFact?) throws {
        // RFC 9449 section 5: a bound refresh token needs a proof by its key.
        if let bound = started.dpopKey, bound != dpopKey {
            throw OAuthError(
                "invalid_dpop_proof", dpopKey == nil ? "This refresh token is bound to a DPoP key: send a DPoP proof." : "The DPoP proof is by another key than the refresh token's.")
        }
        // draft-ietf-oauth-attestation-based-client-auth-10 section 9.3 (Refresh token
        // binding): a refresh token that went to an attested app instance is bound to that
        // instance's key, so the refresh needs an attestation of the same key; refused, like a
        // DPoP mismatch, before anything is spent. A family signed in without attestation is
        // bound to none (the seeds' apps).
        if let attested = started.accessToken.attestation, attested.jkt != attestation?.jkt {
            throw OAuthError(
                "invalid_client_attestation",
                attestation == nil
                    ? "This refresh token is bound to the attested app instance that signed in: send its Client Attestation."
                    : "The Client Attestation is of another app instance than the refresh token's.")
        }
    }
}
