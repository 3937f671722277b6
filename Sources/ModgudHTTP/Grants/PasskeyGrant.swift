import ModgudDomain
import ModgudService

/// `urn:cocoar:passkey` (docs/spec.md section 4): `ceremony_id` with `assertion` signs in,
/// with `attestation` signs up (issue 14).
struct PasskeyGrant: TokenGrant {
    let name = GrantType.passkey.rawValue
    let permission: GrantType? = .passkey
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        let (assertion, attestation) = (request.form["assertion"], request.form["attestation"])
        guard let ceremony = request.form["ceremony_id"], (assertion == nil) != (attestation == nil) else {
            throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.")
        }
        return try await PasskeyRedemption.redeem(ceremony: ceremony, assertion: assertion, attestation: attestation, grant: request.signIn, request)
    }
}
