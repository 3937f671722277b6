import Hummingbird
import ModgudDomain
import ModgudService

/// `GET /.well-known/apple-app-site-association` and `GET /.well-known/assetlinks.json`
/// (issue 15): served when the request's host is a realm host that is also the RP-ID of
/// clients with app settings, so a login domain that is its apps' RP-ID needs no other web
/// server. Otherwise 404 (host them on the RP-ID's own site: `modgud client app-links`).
struct AppAssociationController: Sendable {
    /// The apps of a realm's clients whose passkeys live under a host (`AppAssociations.apps`).
    let apps: @Sendable (RealmDirectory.Entry, String) async throws -> (apple: [String], android: [AndroidApp])
    let parsing: RequestParsing

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/.well-known/apple-app-site-association") { request, context in
            await serve(request, context: context) { apps in
                apps.apple.isEmpty ? nil : AppAssociations.appleAppSiteAssociation(appIDs: apps.apple)
            }
        }
        router.get("/.well-known/assetlinks.json") { request, context in
            await serve(request, context: context) { apps in
                apps.android.isEmpty ? nil : AppAssociations.assetLinks(apps: apps.android)
            }
        }
    }

    private func serve(
        _ request: Request, context: ModgudRequestContext, _ document: ((apple: [String], android: [AndroidApp])) -> [UInt8]?
    ) async -> Response {
        do {
            let (realm, _) = try await parsing.realm(request)
            let host = String((request.head.authority ?? "").split(separator: ":").first ?? "")
            guard let body = document(try await apps(realm, host)) else {
                return Problem.response("AppAssociation.NotFound", status: 404, detail: "No app of this realm uses this host as its RP-ID.")
            }
            // Apple and Google fetch these through their CDNs: an hour is what both suggest.
            var response = OAuthResponses.json(rendered: ByteBuffer(bytes: body))
            response.headers[.cacheControl] = "public, max-age=3600"
            return response
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "app-association")
        }
    }
}
