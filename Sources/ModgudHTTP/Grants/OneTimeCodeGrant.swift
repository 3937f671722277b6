import ModgudDomain
import ModgudService

/// `urn:cocoar:otp` (docs/spec.md section 2): an email one-time code for a user. With
/// `link_session` (what a `link_requires_email_code` refusal of a token exchange gave, issue
/// 48), the code also links that provider account to its owner.
struct OneTimeCodeGrant: TokenGrant {
    let name = GrantType.otp.rawValue
    let permission: GrantType? = .otp
    let isNative = true
    /// The count and the DPoP proof's jti claim ride in the same pipeline as the code's read
    /// (one round trip, issue 49).
    let countsItself = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        var signIn = request.signIn
        guard let username = request.form["username"], let code = request.form["otp_code"] else {
            try await request.countRefusal()
            throw OAuthError.invalidRequest("username and otp_code are required.")
        }
        var link: PendingIdentityLink?
        if let session = request.form["link_session"] {
            link = try await request.services.federatedSignIn().pendingLink(session: session, &signIn)
        }
        var response = try await request.services.emailSignIn().redeemCode(email: username, code: code, signIn, linking: link)
        response.passkeyUpgrade = await request.services.passkeys.upgradeHint(for: response, client: request.client)
        return response
    }
}
