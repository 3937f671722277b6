import ModgudDomain
import ModgudService

/// `refresh_token` (RFC 6749 section 6): rotation with reuse detection, and the narrowing or
/// policy switch of scopes and audience (`TokenService.refresh`, `ScopePolicy.refreshed`).
struct RefreshTokenGrant: TokenGrant {
    let name = GrantType.refreshToken.rawValue
    /// `TokenService.refresh` checks the client's permission itself.
    let permission: GrantType? = nil
    let isNative = false
    /// The count and the DPoP proof's jti claim ride in the same pipeline as the refresh
    /// token's lookup (one round trip).
    let countsItself = true
    let refusesUniformly = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let refreshToken = request.form["refresh_token"] else {
            try await request.countRefusal()
            throw OAuthError.invalidRequest("refresh_token is required.")
        }
        // `scope` narrows (RFC 6749 section 6); `resource` (RFC 8707) or Auth0's `audience`
        // narrows the audience or, by the client's refresh policy, switches it. Auth0's SDKs
        // send `offline_access` the client may not have: it is dropped, as at sign-in.
        return try await request.services.tokens.refresh(
            request.refresh(
                refreshToken, scope: Auth0Compatibility.scope(request.form["scope"], client: request.client.settings),
                resources: request.form.all("resource") + (request.form["audience"].map { [$0] } ?? [])))
    }
}
