import EventSourcing
import Hummingbird
import Logging
import ModgudDomain
import ModgudService

/// POST /connect/token (RFC 6749 section 3.2).
struct TokenController: Sendable {
    let core: ModgudCore
    let parsing: RequestParsing

    func token(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, issuer) = try await parsing.realm(request)
            let form = try await parsing.form(request)
            guard let grantType = form["grant_type"] else { return OAuthResponses.error(.invalidRequest("grant_type is required.")) }
            let metadata = EventMetadata(correlationID: context.id, actor: nil, clientIP: nil)
            switch grantType {
            case GrantType.refreshToken.rawValue:
                let client = try await authenticate(request, form, realm: realm.realmID)
                guard let refreshToken = form["refresh_token"] else { return OAuthResponses.error(.invalidRequest("refresh_token is required.")) }
                return OAuthResponses.token(
                    try await core.tokenService.refresh(
                        client: client, refreshToken: refreshToken, resources: form.all("resource"), issuer: issuer, metadata: metadata))
            case GrantType.clientCredentials.rawValue:
                let client = try await authenticate(request, form, realm: realm.realmID)
                return OAuthResponses.token(
                    try await core.tokenService.clientCredentials(
                        client: client, scope: form["scope"], resources: form.all("resource"), issuer: issuer, metadata: metadata))
            case let native where GrantType(rawValue: native).map(GrantType.native.contains) == true:
                // SPEC.md section 0: the realm flag first, then the client's permission.
                guard realm.settings.nativeGrants.enabled else {
                    return OAuthResponses.error(.unsupportedGrantType("This grant type is not enabled for this realm."))
                }
                let client = try await authenticate(request, form, realm: realm.realmID)
                guard client.settings.grants.contains(GrantType(rawValue: native)!) else {
                    return OAuthResponses.error(.unauthorizedClient("The client is not allowed to use this grant type."))
                }
                return OAuthResponses.error(.unsupportedGrantType("This grant type is not available on this server yet."))
            default:
                return OAuthResponses.error(.unsupportedGrantType("The grant type \(grantType) is not supported."))
            }
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let error as OAuthError {
            return OAuthResponses.error(error)
        } catch {
            context.logger.error("token endpoint failed", metadata: ["error": "\(error)"])
            return OAuthResponses.json(OAuthResponses.ErrorBody(error: "server_error", errorDescription: "Try again later."), status: .internalServerError)
        }
    }

    private func authenticate(_ request: Request, _ form: FormBody, realm: String) async throws -> AuthenticatedClient {
        let (id, secret) = try parsing.clientCredentials(request, form)
        return try await core.clientAuthenticator.authenticate(realm: realm, clientID: id, secret: secret)
    }
}
