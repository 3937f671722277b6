import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The person's side of the device grant (RFC 8628 section 3.3, issue 69), for a signed-in app
/// (with its access token: only that person's passkey approves) and for the realm's page
/// (without one: whoever's passkey asserts):
/// - `POST /connect/device/verify` `{ "user_code" }`: what asks (the client, the device's
///   description, its rough network, the scopes) and a passkey ceremony that approves it;
/// - `POST /connect/device/approve` `{ "authorization_id", "ceremonyId", "assertion" }`: the
///   assertion, with user verification, approves it;
/// - `POST /connect/device/deny` `{ "authorization_id", "ceremonyId" }`: "I did not start this".
/// Typing codes is counted per source and per realm (`device.user-code`). Answers are JSON,
/// refusals problem documents: 404 `Device.UnknownCode` for any code that is not live, 400
/// `Device.PasskeyRefused` for an assertion that does not approve.
struct DeviceApprovalController: Sendable {
    let deviceAuthorizations: @Sendable () throws -> DeviceAuthorizationService
    let clients: ClientAuthenticator
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    let resource: ProtectedResource

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(DeviceGrantPaths.verify), use: verify)
        router.post(RouterPath(DeviceGrantPaths.approve), use: approve)
        router.post(RouterPath(DeviceGrantPaths.deny), use: deny)
    }

    struct VerifyBody: Decodable {
        var user_code: String
        static let members: Set<String> = ["user_code"]
    }

    struct DecisionBody: Decodable {
        var authorization_id: String
        var ceremonyId: String
        var assertion: RawJSON?
        static let members: Set<String> = ["authorization_id", "ceremonyId", "assertion"]
    }

    /// What the person is shown: enough to answer "did you start this?".
    struct ShownBody: Encodable {
        var authorization_id: String
        var client_id: String
        var client_name: String?
        var device_name: String?
        var network: String?
        var scope: String
        var expires_in: Int
        var status: String?
        var ceremonyId: String?
        var options: CeremonyOptions?
    }

    func verify(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, approver) = try await caller(request)
            let source = parsing.source(request, context: context)
            try await rateLimiter.check(
                [RateLimitBucket(.deviceUserCodePerIP, key: source), RateLimitBucket(.deviceUserCodePerRealm, key: realm.realmID, source: source)],
                realm: realm.realmID, settings: realm.settings)
            let body = try await parsing.json(VerifyBody.self, request, allowed: VerifyBody.members)
            let (shown, ceremony) = try await deviceAuthorizations().lookUp(
                userCode: body.user_code, realm: realm, approver: approver, metadata: context.eventMetadata(actor: approver.userID))
            var view = try await self.view(shown, realm: realm.realmID)
            view.ceremonyId = ceremony.ceremonyID.uuidString.lowercased()
            view.options = ceremony.options
            return OAuthResponses.json(view)
        }
    }

    func approve(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, approver) = try await caller(request)
            let body = try await parsing.json(DecisionBody.self, request, allowed: DecisionBody.members)
            let (id, ceremonyID) = try Self.ids(body)
            guard let assertion = body.assertion else { throw ServiceRefusal.invalid("Device.InvalidRequest", "assertion is required.") }
            do {
                let shown = try await deviceAuthorizations().approve(
                    realm: realm, authorizationID: id, ceremonyID: ceremonyID, assertion: String(decoding: assertion.bytes, as: UTF8.self),
                    approver: approver, metadata: context.eventMetadata(actor: approver.userID))
                var view = try await self.view(shown, realm: realm.realmID)
                view.status = "approved"
                return OAuthResponses.json(view)
            } catch is OAuthError {
                // The passkey's refusal: one answer, whatever was wrong (seed 001's "don't parse it").
                throw ServiceRefusal.invalid("Device.PasskeyRefused", "The passkey did not approve the device (user verification is required).")
            }
        }
    }

    func deny(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, approver) = try await caller(request)
            let body = try await parsing.json(DecisionBody.self, request, allowed: DecisionBody.members)
            let (id, ceremonyID) = try Self.ids(body)
            try await deviceAuthorizations().deny(
                realm: realm, authorizationID: id, ceremonyID: ceremonyID, approver: approver, metadata: context.eventMetadata(actor: approver.userID))
            return OAuthResponses.json(["status": "denied"])
        }
    }

    /// The realm, and who approves: a signed-in app when the request carries an access token
    /// (checked as the account endpoints check it), else the realm's page.
    private func caller(_ request: Request) async throws -> (RealmDirectory.Entry, DeviceAuthorizationService.Approver) {
        let (realm, issuer) = try await parsing.realm(request)
        guard request.headers[.authorization] != nil else { return (realm, .web) }
        let caller = try await resource.accountCaller(request, realm: realm, issuer: issuer)
        return (realm, .app(clientID: caller.clientID, userID: caller.userID))
    }

    private static func ids(_ body: DecisionBody) throws -> (UUID, UUID) {
        guard let id = UUID(uuidString: body.authorization_id), let ceremonyID = UUID(uuidString: body.ceremonyId) else {
            throw DeviceAuthorizationService.unknownCode
        }
        return (id, ceremonyID)
    }

    private func view(_ shown: DeviceAuthorizationService.Shown, realm: String) async throws -> ShownBody {
        let name = try await clients.enabledClient(realm: realm, clientID: shown.clientID)?.displayName
        return ShownBody(
            authorization_id: shown.authorizationID.uuidString.lowercased(), client_id: shown.clientID, client_name: name?.isEmpty == false ? name : nil,
            device_name: shown.device.name, network: shown.device.network, scope: shown.scopes.joined(separator: " "),
            expires_in: shown.expiresIn)
    }

    private func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        await ProblemEdge.respondWithProblems(context, body)
    }
}
