import ModgudDomain
import ModgudService

/// `urn:cocoar:otp` (docs/spec.md section 2): an email one-time code for a user.
struct OneTimeCodeGrant: TokenGrant {
    let name = GrantType.otp.rawValue
    let permission: GrantType? = .otp
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let username = request.form["username"], let code = request.form["otp_code"] else {
            throw OAuthError.invalidRequest("username and otp_code are required.")
        }
        var response = try await request.services.emailSignIn().redeemCode(email: username, code: code, request.signIn)
        response.passkeyUpgrade = await request.services.passkeys.upgradeHint(for: response, client: request.client)
        return response
    }
}
