import EventSourcing
import Hummingbird
import ModgudDomain
import ModgudService

/// POST /connect/device_authorization (RFC 8628 section 3.1, issue 69): a device without a
/// browser asks for a device code and a user code. Client authentication and the rate limits
/// are the token endpoint's (`TokenEndpointGates`); answers and errors are section 3.2's JSON.
/// The person approves at `verification_uri` (the realm's page, `DeviceApprovalPage`) or in a
/// signed-in app (`DeviceApprovalController`); the device polls the token endpoint
/// (`DeviceCodeGrant`).
struct DeviceAuthorizationController: Sendable {
    let gates: TokenEndpointGates
    let parsing: RequestParsing
    let deviceAuthorizations: @Sendable () throws -> DeviceAuthorizationService

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(DeviceGrantPaths.authorization), use: authorize)
    }

    /// Section 3.2's answer.
    struct Body: Encodable {
        var deviceCode: String
        var userCode: String
        var verificationURI: String
        var verificationURIComplete: String
        var expiresIn: Int
        var interval: Int

        enum CodingKeys: String, CodingKey {
            case deviceCode = "device_code"
            case userCode = "user_code"
            case verificationURI = "verification_uri"
            case verificationURIComplete = "verification_uri_complete"
            case expiresIn = "expires_in"
            case interval
        }
    }

    func authorize(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, issuer) = try await parsing.realm(request)
            let form = try await parsing.form(request)
            let source = parsing.source(request, context: context)
            let (client, limits) = try await gates.authenticate(request, form, realm: realm, source: source)
            try await gates.rateLimiter.run(limits)
            let device = DeviceAuthorizationService.Device(name: form["device_name"], network: SourceAddress.roughNetwork(of: source))
            let issued = try await deviceAuthorizations().request(
                client: client, scope: form["scope"], resources: form.all("resource"), device: device,
                metadata: EventMetadata(correlationID: context.id, actor: "client:\(client.id)", clientIP: context.peerAddress, userAgent: context.userAgent))
            let page = RequestParsing.base(of: issuer) + DeviceGrantPaths.page
            return OAuthResponses.json(
                Body(
                    deviceCode: issued.deviceCode, userCode: issued.userCode.description, verificationURI: page,
                    verificationURIComplete: page + "?user_code=" + issued.userCode.description, expiresIn: issued.expiresIn, interval: issued.interval))
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let error as OAuthError {
            return OAuthResponses.error(error)
        } catch let limited as RateLimited {
            return OAuthResponses.rateLimited(limited)
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "device_authorization")
        }
    }
}
