import ModgudDomain
import ModgudService

/// Auth0's `http://auth0.com/oauth/grant-type/passwordless/otp` (its passwordless API, issue
/// 24): the email one-time code grant by another name. `username` is the address, `otp` the
/// code, `realm` the connection (`email`, or another of the realm's connection names). The
/// same redemption as `urn:cocoar:otp`: posture, TOTP, the rate limits and the code's
/// attempt limit apply alike.
struct Auth0PasswordlessOTPGrant: TokenGrant {
    let name = Auth0Compatibility.passwordlessOTPGrant
    let permission: GrantType? = .otp
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let username = request.form["username"], let code = request.form["otp"] else {
            throw OAuthError.invalidRequest("username and otp are required.")
        }
        let grant = request.signIn(
            scope: Auth0Compatibility.scope(request.form["scope"], client: request.client.settings),
            resources: try Auth0Compatibility.resources(request.form, realm: request.realm))
        var response = try await request.services.emailSignIn().redeemCode(email: username, code: code, grant)
        response.passkeyUpgrade = await request.services.passkeys.upgradeHint(for: response, client: request.client)
        return response
    }
}
