import ModgudService

/// The redemption both passkey grants share (`urn:cocoar:passkey` and Auth0's webauthn grant,
/// issue 42: neither calls the other): an assertion signs in, an attestation signs up.
enum PasskeyRedemption {
    /// Signs in with an assertion or up with an attestation. A sign-up also counts against
    /// the passkey limit per source, since its answer may tell that an address has an account.
    static func redeem(ceremony: String, assertion: String?, attestation: String?, grant: UserGrantRequest, _ request: GrantRequest)
        async throws -> TokenResponse
    {
        let services = request.services
        if let attestation {
            let perSource = services.rateLimiter.prepare(
                [RateLimitBucket(.passkeyPerIP, key: request.source)], realm: request.realm.realmID, settings: request.realm.settings)
            return try await services.passkeys.redeemSignUp(
                client: grant.client, ceremonyID: ceremony, attestation: Array(attestation.utf8), grant, perSource: perSource)
        }
        guard let assertion else {
            try await request.countRefusal()
            throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.")
        }
        return try await services.passkeys.redeem(client: grant.client, ceremonyID: ceremony, assertion: assertion, grant)
    }
}
