import ModgudDomain
import ModgudService

/// `authorization_code` for the codes of the Authorization Challenge Endpoint
/// (draft-ietf-oauth-first-party-apps section 5; RFC 6749 section 4.1.3): the code, the client
/// that got it, the PKCE verifier (RFC 7636 section 4.5) and, when the code is DPoP-bound, a
/// proof by the same key (RFC 9449 section 10). The sign-in happened at the challenge step,
/// through the native grant of its factor; the code hands over its token response once.
/// Modgud has no browser flow, so no other authorization code exists and no `redirect_uri` is
/// taken.
struct AuthorizationCodeGrant: TokenGrant {
    let name = "authorization_code"
    /// The challenge endpoint checked the client's permission for the factor it proved.
    let permission: GrantType? = nil
    let isNative = true

    func redeem(_ request: GrantRequest) async throws -> TokenResponse {
        guard let code = request.form["code"], let verifier = request.form["code_verifier"] else {
            throw OAuthError.invalidRequest("code and code_verifier are required.")
        }
        do {
            return try await request.services.firstParty.redeem(
                code: code, realm: request.realm.realmID, clientID: request.client.id, verifier: verifier, jkt: request.dpopKey,
                metadata: request.metadata(actorIsClient: true))
        } catch let reused as FirstPartyAuthorization.CodeReused {
            // RFC 9700 section 4.2.4: the tokens the code gave are revoked.
            if let familyID = reused.familyID {
                try await request.services.revocation.revokeForCodeReuse(
                    realm: request.realm.realmID, familyID: familyID, metadata: request.metadata(actorIsClient: true))
            }
            throw FirstPartyAuthorization.codeRefused
        }
    }
}
