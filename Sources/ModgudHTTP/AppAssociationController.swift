import Hummingbird
import ModgudDomain
import ModgudService

/// `GET /.well-known/apple-app-site-association` and `GET /.well-known/assetlinks.json`
/// (issues 15 and 25): served on a realm host that is the RP-ID of clients with app settings
/// (passkeys) or the realm's magic-link host (apps of clients with `urn:cocoar:magic`), so the
/// login domain needs no other web server. Otherwise 404 (an RP-ID that is not a realm host
/// serves them itself: `modgud client app-links`).
struct AppAssociationController: Sendable {
    /// What a host serves (`RealmAdministration.appAssociations`).
    let realms: RealmAdministration
    let parsing: RequestParsing

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/.well-known/apple-app-site-association") { request, context in
            await serve(request, context: context) { apps in
                apps.hasApple ? AppAssociations.appleAppSiteAssociation(apps) : nil
            }
        }
        router.get("/.well-known/assetlinks.json") { request, context in
            await serve(request, context: context) { apps in
                apps.hasAndroid ? AppAssociations.assetLinks(apps) : nil
            }
        }
    }

    private func serve(
        _ request: Request, context: ModgudRequestContext, _ document: (AppAssociations.HostApps) -> [UInt8]?
    ) async -> Response {
        do {
            let (realm, _) = try await parsing.realm(request)
            let host = String((request.head.authority ?? "").split(separator: ":").first ?? "")
            guard let body = document(try await realms.appAssociations(realm: realm, host: host)) else {
                return Problem.response("AppAssociation.NotFound", status: 404, detail: "No app of this realm uses this host for passkeys or magic links.")
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
