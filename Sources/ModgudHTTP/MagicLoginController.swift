import HTTPTypes
import Hummingbird
import ModgudService

/// `GET /magic-login` (issue 25): where a magic link lands when no app claimed it. Shows
/// `MagicLoginPage` for the host's realm; never consumes the token (only the app's token
/// request does), so opening the link on a laptop first does not spend it.
struct MagicLoginController: Sendable {
    let parsing: RequestParsing

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/magic-login", use: page)
    }

    func page(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, _) = try await parsing.realm(request)
            let query = request.uri.queryParameters
            let retry = MagicLoginPage.retryPath(userID: query["userId"].map(String.init), token: query["token"].map(String.init))
            let html = MagicLoginPage.render(realmName: realm.settings.displayName, retryPath: retry, webFallbackURL: realm.settings.webFallbackURL)
            var headers = HTTPFields()
            for (name, value) in MagicLoginPage.headers { headers[HTTPField.Name(name)!] = value }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "magic-login")
        }
    }
}
