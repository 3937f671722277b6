import Foundation
import HTTPTypes
import Hummingbird
import ModgudService

/// `GET /magic-login` (issue 25): where a magic link lands when no app claimed it. Shows
/// `MagicLoginPage` for the host's realm, with buttons that open the realm's magic-link apps
/// (issue 65, item 6: `MagicLoginButtons`); never consumes the token (only the app's token
/// request does), so opening the link on a laptop first does not spend it.
struct MagicLoginController: Sendable {
    let parsing: RequestParsing
    /// The apps of the link host (`RealmAdministration.appAssociations`).
    let realms: RealmAdministration

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/magic-login", use: page)
    }

    func page(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, issuer) = try await parsing.realm(request)
            let query = request.uri.queryParameters
            var buttons: [MagicLoginButtons.Button] = []
            if let path = MagicLoginPage.retryPath(userID: query["userId"].map(String.init), token: query["token"].map(String.init)) {
                // The link as mailed (`EmailSignInService.requestMagicLink`): on the link host.
                let base = (realm.settings.publicBaseURL ?? RequestParsing.base(of: issuer)).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                let apps = try await realms.appAssociations(realm: realm, host: URL(string: base)?.host ?? "")
                buttons = MagicLoginButtons.buttons(link: base + path, apps: apps, userAgent: request.headers[.userAgent])
            }
            let html = MagicLoginPage.render(realmName: realm.settings.displayName, buttons: buttons, webFallbackURL: realm.settings.webFallbackURL)
            return HTMLPage.response(html, headers: MagicLoginPage.headers)
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "magic-login")
        }
    }
}
