import ModgudDomain
import ModgudService

/// `urn:cocoar:passkey` (docs/spec.md section 4): `ceremony_id` with `assertion` signs in,
/// with `attestation` signs up (issue 14).
struct PasskeyGrant: TokenGrant {
    let name = GrantType.passkey.rawValue
    let permission: GrantType? = .passkey
    let isNative = true
    /// A sign-in's count and DPoP proof's jti claim ride in the same pipeline as the
    /// credential's lookup (one round trip, issue 49).
    let countsItself = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        let (assertion, attestation) = (request.form["assertion"], request.form["attestation"])
        guard let ceremony = request.form["ceremony_id"], (assertion == nil) != (attestation == nil) else {
            try await request.countRefusal()
            throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.")
        }
        return try await PasskeyRedemption.redeem(ceremony: ceremony, assertion: assertion, attestation: attestation, grant: request.signIn, request)
    }
}
