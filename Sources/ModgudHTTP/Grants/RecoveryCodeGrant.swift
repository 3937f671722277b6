import ModgudDomain
import ModgudService

/// `urn:modgud:recovery-code` (issue 46): `username` (the address) and `recovery_code` give a
/// recovery session, an access token that can only enroll a passkey and manage sessions
/// (docs/api.md, "Recovery codes"). Refusals are `invalid_grant` "Invalid recovery code." for
/// every address, after the jitter.
struct RecoveryCodeGrant: TokenGrant {
    let name = GrantType.recoveryCode.rawValue
    let permission: GrantType? = .recoveryCode
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let username = request.form["username"], let code = request.form["recovery_code"] else {
            throw OAuthError.invalidRequest("username and recovery_code are required.")
        }
        return try await request.services.recoveryCodes().redeem(email: username, code: code, request.signIn, source: request.source, settings: request.realm.settings)
    }
}
