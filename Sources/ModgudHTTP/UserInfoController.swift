import Foundation
import Hummingbird
import ModgudService

/// GET|POST /connect/userinfo (OIDC Core section 5.3), authenticated by a Bearer access token
/// (RFC 6750) or a DPoP-bound one with its proof (RFC 9449 section 7). Claims follow the
/// token's scopes.
struct UserInfoController: Sendable {
    let tokens: TokenService
    let resource: ProtectedResource
    let parsing: RequestParsing

    struct Claims: Encodable {
        var sub: String
        var email: String?
        var emailVerified: Bool?
        var givenName: String?
        var familyName: String?
        var preferredUsername: String?
        enum CodingKeys: String, CodingKey {
            case sub, email
            case emailVerified = "email_verified"
            case givenName = "given_name"
            case familyName = "family_name"
            case preferredUsername = "preferred_username"
        }
    }

    func userinfo(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, issuer) = try await parsing.realm(request)
            let caller = try await resource.caller(request, realm: realm.realmID, issuer: issuer)
            let scopes = Set(caller.scopes)
            guard scopes.contains("openid") else { return ProtectedResource.challenge("insufficient_scope", scheme: caller.scheme, status: .forbidden) }
            let user = try await tokens.user(realm: realm.realmID, id: caller.userID)
            let email = scopes.contains("email")
            let profile = scopes.contains("profile")
            // Personal claims are opened for this answer only (issue 13).
            let opened = email || profile ? try await tokens.profile(of: user) : nil
            return OAuthResponses.json(
                Claims(
                    sub: caller.userID.uuidString.lowercased(), email: email ? opened?.email : nil,
                    emailVerified: email && opened?.email != nil ? user.emailConfirmed : nil, givenName: profile ? opened?.firstName : nil,
                    familyName: profile ? opened?.lastName : nil, preferredUsername: profile ? opened?.username : nil))
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "userinfo")
        }
    }
}
