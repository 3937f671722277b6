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
            // A sign-up's first statement is no read: its checks (a grant that counts itself) go alone.
            try await services.rateLimiter.send(grant.checks)
            try await services.rateLimiter.check(.passkeyPerIP, key: request.source, realm: request.realm.realmID, settings: request.realm.settings)
            var sent = grant
            sent.checks = .none
            return try await services.passkeys.redeemSignUp(client: grant.client, ceremonyID: ceremony, attestation: Array(attestation.utf8), sent)
        }
        guard let assertion else {
            try await services.rateLimiter.countRefusal(grant.checks)
            throw OAuthError.invalidRequest("ceremony_id and assertion (sign-in) or attestation (sign-up) are required.")
        }
        return try await services.passkeys.redeem(client: grant.client, ceremonyID: ceremony, assertion: assertion, grant)
    }
}
