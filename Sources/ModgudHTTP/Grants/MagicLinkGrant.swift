import ModgudDomain
import ModgudService

/// `urn:cocoar:magic` (docs/spec.md section 3): a magic link's user id and token.
struct MagicLinkGrant: TokenGrant {
    let name = GrantType.magic.rawValue
    let permission: GrantType? = .magic
    let isNative = true
    /// The count and the DPoP proof's jti claim ride in the same pipeline as the user's read
    /// (one round trip, issue 49).
    let countsItself = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let userID = request.form["user_id"], let token = request.form["magic_token"] else {
            try await request.countRefusal()
            throw OAuthError.invalidRequest("user_id and magic_token are required.")
        }
        var response = try await request.services.emailSignIn().redeemMagicLink(userID: userID, token: token, request.signIn)
        response.passkeyUpgrade = await request.services.passkeys.upgradeHint(for: response, client: request.client)
        return response
    }
}
