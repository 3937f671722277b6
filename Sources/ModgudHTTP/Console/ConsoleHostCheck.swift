import Hummingbird

/// Refuses a console request that names a host the console does not answer to (421 Misdirected
/// Request, RFC 9110 section 15.5.20): `ConsoleConfiguration.hostnames` (issue 43).
struct ConsoleHostCheck: RouterMiddleware {
    typealias Context = ModgudRequestContext
    let configuration: ConsoleConfiguration

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path.hasPrefix("/console"), !configuration.answers(to: request.head.authority) else {
            return try await next(request, context)
        }
        var response = Response(status: .misdirectedRequest, body: .init(byteBuffer: .init(string: "This console answers only to its configured host names.\n")))
        response.headers[.contentType] = "text/plain; charset=utf-8"
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
