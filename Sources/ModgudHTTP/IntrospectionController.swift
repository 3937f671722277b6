import EventSourcing
import Hummingbird
import ModgudService

/// POST /connect/introspect (RFC 7662) and POST /connect/revoke (RFC 7009).
struct IntrospectionController: Sendable {
    let clients: ClientAuthenticator
    let introspection: TokenIntrospection
    let revocation: TokenRevocation
    let parsing: RequestParsing

    /// RFC 7662 section 2.1: the caller must authenticate; only confidential clients can.
    func introspect(_ request: Request, context: ModgudRequestContext) async -> Response {
        await handle(context) {
            let (realm, _) = try await parsing.realm(request)
            let form = try await parsing.form(request)
            let (id, secret) = try parsing.clientCredentials(request, form)
            guard secret != nil else { throw OAuthError.invalidClient(attempted: true) }
            _ = try await clients.authenticate(realm: realm.realmID, clientID: id, secret: secret)
            guard let token = form["token"] else { throw OAuthError.invalidRequest("token is required.") }
            return OAuthResponses.introspection(try await introspection.introspect(realm: realm.realmID, token: token))
        }
    }

    /// RFC 7009 section 2.2: 200 whether or not the token was valid.
    func revoke(_ request: Request, context: ModgudRequestContext) async -> Response {
        await handle(context) {
            let (realm, _) = try await parsing.realm(request)
            // A form (RFC 7009), or JSON as Auth0's SDKs send to /oauth/revoke.
            let form = try await parsing.tokenParameters(request)
            let (id, secret) = try parsing.clientCredentials(request, form)
            let client = try await clients.authenticate(realm: realm.realmID, clientID: id, secret: secret)
            guard let token = form["token"] else { throw OAuthError.invalidRequest("token is required.") }
            try await revocation.revoke(client: client, token: token, metadata: EventMetadata(correlationID: context.id))
            var response = Response(status: .ok)
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }

    private func handle(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let error as OAuthError {
            return OAuthResponses.error(error)
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "introspection")
        }
    }
}
