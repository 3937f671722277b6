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
    console: ConsoleConfiguration? = nil, logger: Logger = Logger(label: "modgud.http")
) -> some ApplicationProtocol {
    let router = buildRouter(core: core, configuration: configuration, console: console)
    let limits = configuration.limits
    var server = server
    server.availableConnectionsDelegate = MaximumAvailableConnections(limits.maxConnections, logger: logger)
    return Application(
        router: router, server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: limits)])), configuration: server,
        logger: logger)
}

/// The operator console alone (issue 31), for its own listener (`MODGUD_CONSOLE_PORT`): the
/// console's routes and the health endpoints, under the same connection limits.
public func buildConsoleApplication(
    core: ModgudCore, configuration: HTTPConfiguration, console: ConsoleConfiguration, server: ApplicationConfiguration,
    logger: Logger = Logger(label: "modgud.console")
) -> some ApplicationProtocol {
    let router = Router(context: ModgudRequestContext.self)
    router.add(middleware: RequestObservationMiddleware())
    HealthController(readiness: core.readiness, metrics: nil).register(on: router)
    consoleController(core: core, console: console).register(on: router)
    var server = server
    server.availableConnectionsDelegate = MaximumAvailableConnections(configuration.limits.maxConnections, logger: logger)
    return Application(
        router: router, server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: configuration.limits)])),
        configuration: server, logger: logger)
}

func consoleController(core: ModgudCore, console: ConsoleConfiguration) -> ConsoleController {
    ConsoleController(
        console: core.console(settings: console.settings), admin: core.administration, configuration: console, operations: core.operations,
        hostCheck: ConsoleHostCheck(configuration: console, realms: core.realmDirectory, clients: core.clientAuthenticator))
}

/// What the token endpoint's grants and the challenge endpoint use.
func grantServices(_ core: ModgudCore) -> GrantServices {
    GrantServices(
        tokens: core.tokenService, introspection: core.tokenIntrospection, revocation: core.tokenRevocation, clientCredentials: core.clientCredentials,
        nativeSSO: core.nativeSSO, passkeys: core.passkeys, rateLimiter: core.rateLimiter, emailSignIn: core.emailSignIn,
        dpop: core.dpop, firstParty: core.firstParty, recoveryCodes: core.recoveryCodes, federatedSignIn: core.federatedSignIn,
        deviceAuthorizations: core.deviceAuthorizations)
}

/// The routes, for in-process tests. `console`: the operator console on the same routes (off
/// unless asked for: docs/operations/console.md).
public func buildRouter(core: ModgudCore, configuration: HTTPConfiguration = HTTPConfiguration(), console: ConsoleConfiguration? = nil)
    -> Router<ModgudRequestContext>
{
    let parsing = RequestParsing(realms: core.realmDirectory, configuration: configuration)
    let router = Router(context: ModgudRequestContext.self)
    router.add(middleware: RequestObservationMiddleware())
    // Each controller gets the services it uses, not the composition root.
    let grantServices = grantServices(core)
    let attestation = ClientAttestationGate(verifier: core.clientAttestation, clients: core.clientAuthenticator)
    let gates = TokenEndpointGates(
        parsing: parsing, clients: core.clientAuthenticator, rateLimiter: core.rateLimiter, dpop: core.dpop, attestation: attestation)
    let tokens = TokenController(services: grantServices, gates: gates, parsing: parsing)
    let introspection = IntrospectionController(
        clients: core.clientAuthenticator, introspection: core.tokenIntrospection, revocation: core.tokenRevocation, parsing: parsing)
    let discovery = DiscoveryController(keys: core.keys, parsing: parsing)
    let resource = ProtectedResource(introspection: core.tokenIntrospection, clients: core.clientAuthenticator, dpop: core.dpop)
    let userinfo = UserInfoController(tokens: core.tokenService, resource: resource, parsing: parsing)
    router.post("/connect/token", use: tokens.token)
    AuthorizationChallengeController(gates: gates, parsing: parsing, services: grantServices).register(on: router)
    router.post("/connect/introspect", use: introspection.introspect)
    router.post("/connect/revoke", use: introspection.revoke)
    router.get("/connect/userinfo", use: userinfo.userinfo)
    router.post("/connect/userinfo", use: userinfo.userinfo)
    // Auth0's paths for the same endpoints (issue 24): its SDKs send tokens to /oauth/token.
    router.post("/oauth/token", use: tokens.token)
    router.post("/oauth/revoke", use: introspection.revoke)
    router.get("/userinfo", use: userinfo.userinfo)
    router.get("/.well-known/openid-configuration", use: discovery.configuration)
    router.get("/.well-known/oauth-authorization-server", use: discovery.configuration)
    router.get("/connect/authorize", use: discovery.authorize)
    router.post("/connect/authorize", use: discovery.authorize)
    router.get("/.well-known/jwks.json", use: discovery.jwks)
    HealthController(readiness: core.readiness, metrics: configuration.metrics).register(on: router)
    OpenAPIDocument.register(on: router)
    AccountController(
        emailSignIn: core.emailSignIn, totpEnrollment: core.totpEnrollment, tokens: core.tokenService, resource: resource,
        parsing: parsing, attestation: attestation
    ).register(on: router)
    PasskeyController(passkeys: core.passkeys, rateLimiter: core.rateLimiter, parsing: parsing, resource: resource, attestation: attestation)
        .register(on: router)
    MyAccountController(passkeys: core.passkeys, rateLimiter: core.rateLimiter, parsing: parsing, resource: resource).register(on: router)
    RecoveryCodeController(recoveryCodes: core.recoveryCodes, passkeys: core.passkeys, rateLimiter: core.rateLimiter, parsing: parsing, resource: resource)
        .register(on: router)
    SessionController(revocation: core.tokenRevocation, parsing: parsing, resource: resource).register(on: router)
    IdentityController(federatedSignIn: core.federatedSignIn, passkeys: core.passkeys, parsing: parsing, resource: resource).register(on: router)
    Auth0PasskeyController(passkeys: core.passkeys, rateLimiter: core.rateLimiter, parsing: parsing, attestation: attestation).register(on: router)
    Auth0PasswordlessController(clients: core.clientAuthenticator, emailSignIn: core.emailSignIn, parsing: parsing, attestation: attestation)
        .register(on: router)
    ClientAttesterController(attester: core.attester, verifier: core.clientAttestation, rateLimiter: core.rateLimiter, parsing: parsing, dpop: core.dpop)
        .register(on: router)
    FederationController(federation: core.federation, federatedSignIn: core.federatedSignIn, parsing: parsing).register(on: router)
    MagicLoginController(parsing: parsing, realms: core.administration.realms).register(on: router)
    registerDeviceGrant(on: router, core: core, gates: gates, parsing: parsing, resource: resource)
    SharedSignalsController(streams: core.signalStreams, resource: resource, parsing: parsing, longPoll: configuration.signalLongPoll,
        readiness: core.readiness).register(on: router)
    AppAssociationController(realms: core.administration.realms, parsing: parsing).register(on: router)
    AdminController(introspection: core.tokenIntrospection, admin: core.administration, configuration: configuration).register(on: router)
    if let console { consoleController(core: core, console: console).register(on: router) }
    return router
}

/// The device authorization grant's routes (RFC 8628, issue 69): the device's endpoint, the
/// person's JSON endpoints and the realm's approval page. The grant itself is the token endpoint's.
private func registerDeviceGrant(
    on router: Router<ModgudRequestContext>, core: ModgudCore, gates: TokenEndpointGates, parsing: RequestParsing, resource: ProtectedResource
) {
    DeviceAuthorizationController(gates: gates, parsing: parsing, deviceAuthorizations: core.deviceAuthorizations).register(on: router)
    DeviceApprovalController(
        deviceAuthorizations: core.deviceAuthorizations, clients: core.clientAuthenticator, rateLimiter: core.rateLimiter, parsing: parsing,
        resource: resource
    ).register(on: router)
    DeviceApprovalPage(parsing: parsing).register(on: router)
}
