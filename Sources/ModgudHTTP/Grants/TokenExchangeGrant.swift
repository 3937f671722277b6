import Foundation
import ModgudDomain
import ModgudService

/// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693; issue 48): a provider's ID
/// token for the realm's tokens. `subject_token` is the ID token; `subject_token_type` is
/// `urn:ietf:params:oauth:token-type:id_token` (RFC 8693 section 3), or Auth0's
/// `http://auth0.com/oauth/token-type/google-id-token`, or Auth0's
/// `http://auth0.com/oauth/token-type/apple-authz-code` with Apple's authorization code
/// (`FederatedSignIn.exchange(appleCode:)`); `nonce` is the one
/// `POST /connect/federation/nonce` gave; `given_name` and `family_name` (or Auth0's
/// `user_profile` JSON `{"name": {"firstName", "lastName"}}`) carry the names Apple gives the
/// app once. Refusals are `invalid_grant` whose description starts with the reason code
/// (`issuer: …`, `nonce: …`, `link_requires_email_code: …`).
///
/// With an `actor_token` of type `urn:openid:params:token-type:device-secret`, it is OpenID
/// Connect Native SSO's exchange (draft 07 section 4; issue 69): the ID token of the device
/// session, its device secret, and `audience` the issuer.
struct TokenExchangeGrant: TokenGrant {
    let name = GrantType.tokenExchange.rawValue
    let permission: GrantType? = .tokenExchange
    let isNative = true

    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    static let auth0GoogleIDToken = "http://auth0.com/oauth/token-type/google-id-token"
    /// Auth0's native Sign in with Apple: the `authorizationCode`, redeemed at Apple's token endpoint.
    static let auth0AppleCode = "http://auth0.com/oauth/token-type/apple-authz-code"

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        let form = request.form
        guard let token = form["subject_token"], let type = form["subject_token_type"] else {
            throw OAuthError.invalidRequest("subject_token and subject_token_type are required.")
        }
        guard type == Self.idTokenType || type == Self.auth0GoogleIDToken || type == Self.auth0AppleCode else {
            throw OAuthError.invalidRequest("subject_token_type must be \(Self.idTokenType) or \(Self.auth0AppleCode).")
        }
        if let requested = form["requested_token_type"], requested != Self.accessTokenType {
            throw OAuthError.invalidRequest("requested_token_type may only be \(Self.accessTokenType).")
        }
        if let actorType = form["actor_token_type"], NativeSSO.deviceSecretTypes.contains(actorType) {
            guard type == Self.idTokenType else { throw OAuthError.invalidRequest("A Native SSO exchange's subject_token_type is \(Self.idTokenType).") }
            return try await nativeSSO(request, idToken: token)
        }
        guard form["actor_token"] == nil else { throw OAuthError.invalidRequest("Delegation (actor_token) is not supported.") }
        let names = Self.names(form)
        let exchange = FederatedSignIn.Exchange(idToken: token, nonce: form["nonce"], firstName: names.first, lastName: names.last)
        do {
            let signIn = try request.services.federatedSignIn()
            var response =
                type == Self.auth0AppleCode
                ? try await signIn.exchange(appleCode: token, exchange, realm: request.realm.settings, request.signIn)
                : try await signIn.exchange(exchange, realm: request.realm.settings, request.signIn)
            response.issuedTokenType = Self.accessTokenType
            return response
        } catch FederationError.refused(let reason, let detail) {
            throw OAuthError.invalidGrant("\(reason): \(detail)")
        } catch FederationError.linkNeedsEmailCode(let session, let expiresIn, let detail) {
            var refusal = OAuthError.invalidGrant("link_requires_email_code: \(detail)")
            refusal.linkSession = (session, expiresIn)
            throw refusal
        } catch FederationError.keysUnavailable(let detail) {
            throw OAuthError("temporarily_unavailable", "The provider's keys could not be fetched (\(detail)); retry shortly.")
        }
    }

    /// Native SSO's exchange (draft 07 section 4.1): `actor_token` the device secret,
    /// `audience` the issuer (REQUIRED).
    func nativeSSO(_ request: GrantRequest, idToken: String) async throws -> TokenResponse {
        let form = request.form
        guard let secret = form["actor_token"], !secret.isEmpty else { throw OAuthError.invalidRequest("actor_token (the device secret) is required.") }
        guard let audience = form["audience"] else { throw OAuthError.invalidRequest("audience (the issuer) is required in a Native SSO exchange.") }
        guard Self.trimmed(audience) == Self.trimmed(request.issuer) else {
            throw OAuthError.invalidTarget("The audience of a Native SSO exchange is the issuer, \(request.issuer).")
        }
        var response = try await request.services.nativeSSO.exchangeDeviceSecret(
            client: request.client,
            .init(idToken: idToken, deviceSecret: secret, scope: form["scope"], resources: form.all("resource"), nonce: form["nonce"]),
            issuer: request.issuer, dpopKey: request.dpopKey, metadata: request.metadata(actorIsClient: true))
        response.issuedTokenType = Self.accessTokenType
        return response
    }

    private static func trimmed(_ url: String) -> Substring { url.hasSuffix("/") ? url.dropLast() : Substring(url) }

    /// `given_name` and `family_name`, else Auth0's `user_profile`.
    static func names(_ form: FormBody) -> (first: String?, last: String?) {
        if form["given_name"] != nil || form["family_name"] != nil { return (form["given_name"], form["family_name"]) }
        guard let profile = form["user_profile"], profile.utf8.count <= 4096,
            let object = try? JSONSerialization.jsonObject(with: Data(profile.utf8)) as? [String: Any],
            let name = object["name"] as? [String: Any]
        else { return (nil, nil) }
        return (name["firstName"] as? String, name["lastName"] as? String)
    }
}
