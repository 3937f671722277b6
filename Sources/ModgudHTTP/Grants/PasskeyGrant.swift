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
        return try await Self.redeem(ceremony: ceremony, assertion: assertion, attestation: attestation, grant: request.signIn, request)
    }

    /// Signs in with an assertion or up with an attestation. A sign-up also counts against
    /// the passkey limit per source, since its answer may tell that an address has an account.
    static func redeem(ceremony: String, assertion: String?, attestation: String?, grant: EmailSignInService.GrantRequest, _ request: GrantRequest)
        async throws -> TokenResponse
    {
        let services = request.services
        if let attestation {
            try await services.rateLimiter.check(.passkeyPerIP, key: request.source, realm: request.realm.realmID, settings: request.realm.settings)
            return try await services.passkeys.redeemSignUp(client: grant.client, ceremonyID: ceremony, attestation: Array(attestation.utf8), grant)
        }
        guard let assertion else { throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.") }
        return try await services.passkeys.redeem(client: grant.client, ceremonyID: ceremony, assertion: assertion, grant)
    }
}
