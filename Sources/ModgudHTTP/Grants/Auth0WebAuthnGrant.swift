import ModgudDomain
import ModgudService

/// Auth0's `urn:okta:params:oauth:grant-type:webauthn` (its Native Passkeys API): the passkey
/// grant by another name. `auth_session` is the ceremony; `authn_response` an attestation
/// (sign-up) or an assertion (sign-in). Auth0's `realm`, `audience` and `scope` rules apply
/// (`Auth0Compatibility`).
struct Auth0WebAuthnGrant: TokenGrant {
    let name = Auth0Compatibility.webauthnGrant
    let permission: GrantType? = .passkey
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        let settings = request.client.settings
        let grant = request.signIn(
            scope: Auth0Compatibility.scope(request.form["scope"], client: settings),
            resources: try Auth0Compatibility.resources(request.form, realm: request.realm))
        guard let session = request.form["auth_session"], let response = request.form["authn_response"] else {
            throw OAuthError.invalidRequest("auth_session and authn_response are required.")
        }
        let signUp = Auth0Compatibility.isAttestation(response)
        return try await PasskeyRedemption.redeem(
            ceremony: session, assertion: signUp ? nil : response, attestation: signUp ? response : nil, grant: grant, request)
    }
}
