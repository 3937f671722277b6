import ModgudDomain
import ModgudService

/// `client_credentials` (RFC 6749 section 4.4): a confidential client's own token.
struct ClientCredentialsGrant: TokenGrant {
    let name = GrantType.clientCredentials.rawValue
    /// `TokenService.clientCredentials` checks the client's permission itself.
    let permission: GrantType? = nil
    let isNative = false

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        try await request.services.clientCredentials.clientCredentials(
            client: request.client, scope: request.form["scope"], resources: request.form.all("resource"), issuer: request.issuer,
            metadata: request.metadata(actorIsClient: false), dpopKey: request.dpopKey)
    }
}
