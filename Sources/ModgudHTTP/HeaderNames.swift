import HTTPTypes

/// Header names the server sets or reads on every request, validated once rather than per use.
extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let pragma = HTTPField.Name("Pragma")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    /// RFC 9449 section 4.1: the proof.
    static let dpop = HTTPField.Name("DPoP")!
    /// RFC 9449 section 8: the server's nonce.
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
    /// Auth0's rate-limit headers (its 429s; auth0-python reads the reset as Unix seconds).
    static let rateLimitLimit = HTTPField.Name("X-RateLimit-Limit")!
    static let rateLimitRemaining = HTTPField.Name("X-RateLimit-Remaining")!
    static let rateLimitReset = HTTPField.Name("X-RateLimit-Reset")!
}

/// draft-ietf-oauth-attestation-based-client-auth-10 sections 4, 5.1 and 6.2 (issue 47).
extension HTTPField.Name {
    /// The Client Attestation JWT.
    static let clientAttestation = HTTPField.Name("OAuth-Client-Attestation")!
    /// The Client Attestation PoP JWT.
    static let clientAttestationPoP = HTTPField.Name("OAuth-Client-Attestation-PoP")!
    /// A fresh challenge, on refusals and from the challenge endpoint.
    static let clientAttestationChallenge = HTTPField.Name("OAuth-Client-Attestation-Challenge")!
}
