import Hummingbird
import ModgudService

/// Refuses a console request that names a host the console does not answer to (421 Misdirected
/// Request, RFC 9110 section 15.5.20): `ConsoleConfiguration.hostnames` (issues 43 and 67).
///
/// By default (`MODGUD_CONSOLE_HOSTNAMES` unset) those are the console's own names (its
/// listeners' hosts and loopback), the hosts of every realm, and the console's RP-ID (`modgud
/// console add-operator --rp-id`: the name its passkeys need it served under); the last two as
/// they are at the request, through the caches every request that finds its realm or client
/// uses (dropped on change). `MODGUD_CONSOLE_HOSTNAMES=*` turns the check off: the middleware
/// is then not installed.
struct ConsoleHostCheck: RouterMiddleware {
    typealias Context = ModgudRequestContext
    let configuration: ConsoleConfiguration
    let realms: RealmDirectory
    let clients: ClientAuthenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path.hasPrefix("/console") else { return try await next(request, context) }
        let answers: Bool
        do {
            answers = try await configuration.answers(to: request.head.authority, isRealmHost: isKnownHost)
        } catch {
            // The directory is unreachable: refused for now, not let through.
            return Self.refusal(.serviceUnavailable, "The console cannot check this host name now (the database is unreachable). Try again shortly.\n")
        }
        guard answers else {
            return Self.refusal(.misdirectedRequest, "This console answers only to its configured host names.\n")
        }
        return try await next(request, context)
    }

    /// Whether a realm serves `host`, or it is the console's RP-ID.
    private func isKnownHost(_ host: String) async throws -> Bool {
        if try await realms.realm(forHost: host) != nil { return true }
        let console = try await clients.enabledClient(realm: configuration.settings.realm, clientID: OperatorConsole.clientID)
        return console?.rpID.map { $0.lowercased() == host } ?? false
    }

    private static func refusal(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var response = Response(status: status, body: .init(byteBuffer: .init(string: text)))
        response.headers[.contentType] = "text/plain; charset=utf-8"
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
