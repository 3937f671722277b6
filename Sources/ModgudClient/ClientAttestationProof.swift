import Foundation

/// The proof of possession an attested app instance sends with every request (issue 47;
/// draft-ietf-oauth-attestation-based-client-auth-10 section 5.1): a JWT typed
/// `oauth-client-attestation-pop+jwt`, signed by the instance key its Client Attestation names in
/// `cnf.jwk`, for the authorization server's issuer, with a fresh `jti` and, when the server
/// handed one out, its challenge.
public enum ClientAttestationProof {
    public static let type = "oauth-client-attestation-pop+jwt"

    /// The PoP JWT.
    /// - Parameters:
    ///   - audience: the issuer, as discovery states it.
    ///   - challenge: the server's `OAuth-Client-Attestation-Challenge` (or the challenge
    ///     endpoint's), for a device whose clock may be off.
    public static func make(signer: any DPoPSigner, audience: String, challenge: String? = nil, now: Date = Date()) throws -> String {
        var claims: [String: Any] = ["aud": audience, "jti": UUID().uuidString, "iat": Int(now.timeIntervalSince1970)]
        if let challenge { claims["challenge"] = challenge }
        let input = try DPoPProofBuilder.part(["alg": signer.algorithm, "typ": type]) + "." + DPoPProofBuilder.part(claims)
        return input + "." + Base64URL.encode(try signer.signature(for: Data(input.utf8)))
    }

    /// The two headers of an attested request.
    public static func headers(attestation: String, signer: any DPoPSigner, audience: String, challenge: String? = nil) throws -> [(String, String)] {
        [("OAuth-Client-Attestation", attestation), ("OAuth-Client-Attestation-PoP", try make(signer: signer, audience: audience, challenge: challenge))]
    }
}
