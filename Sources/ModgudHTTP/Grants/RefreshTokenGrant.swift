import ModgudDomain
import ModgudService

/// `refresh_token` (RFC 6749 section 6): rotation with reuse detection (`TokenService.refresh`).
struct RefreshTokenGrant: TokenGrant {
    let name = GrantType.refreshToken.rawValue
    /// `TokenService.refresh` checks the client's permission itself.
    let permission: GrantType? = nil
    let isNative = false
    /// The count and the DPoP proof's jti claim ride in the same pipeline as the refresh
    /// token's lookup (one round trip).
    let countsItself = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let refreshToken = request.form["refresh_token"] else {
            try await request.services.rateLimiter.run(request.limits)
            throw OAuthError.invalidRequest("refresh_token is required.")
        }
        return try await request.services.tokens.refresh(
            client: request.client, refreshToken: refreshToken, resources: request.form.all("resource"), issuer: request.issuer,
            metadata: request.metadata(actorIsClient: false), rateLimit: request.limits, dpopKey: request.dpopKey, dpopClaim: request.dpopClaim)
    }
}
