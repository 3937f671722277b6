import Foundation
import Hummingbird
import ModgudService

/// GET|POST /connect/userinfo (OIDC Core section 5.3), authenticated by a Bearer access token
/// (RFC 6750). Claims follow the token's scopes.
struct UserInfoController: Sendable {
    let tokens: TokenService
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
            let (realm, _) = try await parsing.realm(request)
            guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else {
                return Self.challenge(nil)
            }
            let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
            let result = try await tokens.introspect(realm: realm.realmID, token: token)
            guard result.active, let subject = result.subject, let userID = UUID(uuidString: subject) else {
                return Self.challenge("invalid_token")
            }
            let scopes = Set((result.scope ?? "").split(separator: " ").map(String.init))
            guard scopes.contains("openid") else { return Self.challenge("insufficient_scope", status: .forbidden) }
            let user = try await tokens.user(realm: realm.realmID, id: userID)
            let email = scopes.contains("email")
            let profile = scopes.contains("profile")
            // Personal claims are opened for this answer only (issue 13).
            let opened = email || profile ? try await tokens.vault.profile(of: user) : nil
            return OAuthResponses.json(
                Claims(
                    sub: subject, email: email ? opened?.email : nil, emailVerified: email && opened?.email != nil ? user.emailConfirmed : nil,
                    givenName: profile ? opened?.firstName : nil, familyName: profile ? opened?.lastName : nil,
                    preferredUsername: profile ? opened?.username : nil))
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "userinfo")
        }
    }

    /// RFC 6750 section 3: 401 with a Bearer challenge (403 for insufficient scope).
    static func challenge(_ error: String?, status: HTTPResponse.Status = .unauthorized) -> Response {
        var response = Response(status: status)
        response.headers[.wwwAuthenticate] = error.map { #"Bearer realm="modgud", error="\#($0)""# } ?? #"Bearer realm="modgud""#
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
