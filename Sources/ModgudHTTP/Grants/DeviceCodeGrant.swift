import ModgudDomain
import ModgudService

/// `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 section 3.4): the device's poll
/// with its `device_code`. Until the person approves, section 3.5's answers:
/// `authorization_pending`, `slow_down`, `access_denied`, `expired_token`. Not a native grant:
/// a standard OAuth grant, served whatever the realm's native switch says; the client needs
/// it in its grants (checked by the service, as at the device authorization endpoint).
struct DeviceCodeGrant: TokenGrant {
    let name = GrantType.deviceCode.rawValue
    let permission: GrantType? = nil
    let isNative = false
    /// Section 3.5's answers are immediate: a device must learn at once that it should keep
    /// polling, and a device code is 256 bits, not a guessable proof.
    let refusesUniformly = false

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let deviceCode = request.form["device_code"] else { throw OAuthError.invalidRequest("device_code is required.") }
        return try await request.services.deviceAuthorizations().poll(client: request.client, deviceCode: deviceCode, request.signIn)
    }
}
