import Hummingbird
import HummingbirdCore
import Prometheus
import Logging
import ModgudService

/// Builds the HTTP application. `modgud serve`, `modgud dev` and the tests all use this one
/// function (docs/architecture.md, "House habits": the production composition is what tests run).
///
/// The server enforces `configuration.limits`: header, body and idle deadlines per
/// connection (`RequestDeadlineHandler`) and a cap on open connections.
public func buildApplication(
    core: ModgudCore, configuration: HTTPConfiguration = HTTPConfiguration(), server: ApplicationConfiguration = ApplicationConfiguration(),
    logger: Logger = Logger(label: "modgud.http")
) -> some ApplicationProtocol {
    let router = buildRouter(core: core, configuration: configuration)
    let limits = configuration.limits
    var server = server
    server.availableConnectionsDelegate = MaximumAvailableConnections(limits.maxConnections, logger: logger)
    return Application(
        router: router, server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: limits)])), configuration: server,
        logger: logger)
}

/// The routes, for in-process tests.
public func buildRouter(core: ModgudCore, configuration: HTTPConfiguration = HTTPConfiguration()) -> Router<ModgudRequestContext> {
    let parsing = RequestParsing(core: core, configuration: configuration)
    let router = Router(context: ModgudRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: AccessLogMiddleware())
    router.add(middleware: RequestMetricsMiddleware())
    let tokens = TokenController(core: core, parsing: parsing)
    let introspection = IntrospectionController(core: core, parsing: parsing)
    let discovery = DiscoveryController(core: core, parsing: parsing)
    let userinfo = UserInfoController(core: core, parsing: parsing)
    router.post("/connect/token", use: tokens.token)
    router.post("/connect/introspect", use: introspection.introspect)
    router.post("/connect/revoke", use: introspection.revoke)
    router.get("/connect/userinfo", use: userinfo.userinfo)
    router.post("/connect/userinfo", use: userinfo.userinfo)
    router.get("/.well-known/openid-configuration", use: discovery.configuration)
    router.get("/.well-known/jwks.json", use: discovery.jwks)
    HealthController(readiness: core.readiness, metrics: configuration.metrics).register(on: router)
    OpenAPIDocument.register(on: router)
    let account = AccountController(core: core, parsing: parsing)
    account.register(on: router)
    PasskeyController(core: core, parsing: parsing, account: account).register(on: router)
    Auth0PasskeyController(core: core, parsing: parsing, account: account).register(on: router)
    AppAssociationController(core: core, parsing: parsing).register(on: router)
    AdminController(core: core, admin: AdminService(core: core), configuration: configuration).register(on: router)
    return router
}

/// Echoes or assigns `X-Request-Id`, so logs and responses can be correlated.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = ModgudRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.init("X-Request-Id")!] = request.headers[.init("X-Request-Id")!] ?? context.id
        return response
    }
}
