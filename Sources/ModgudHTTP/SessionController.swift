import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// A person's own sessions (issue 46; docs/api.md, "Sessions"), with their access token
/// (Bearer or DPoP, for the app or My Account), a recovery session's included:
/// - `GET /connect/sessions`: the live sessions, newest first, the caller's own marked `current`;
/// - `DELETE /connect/sessions/{id}`: ends one (its refresh token and access tokens stop
///   working at once); 404 for an id that is not one of the caller's live sessions.
struct SessionController: Sendable {
    let revocation: TokenRevocation
    let parsing: RequestParsing
    let resource: ProtectedResource

    struct SessionBody: Encodable {
        var id: String
        var clientId: String
        var startedAt: String
        var scope: String
        /// The session whose token made this request.
        var current: Bool
    }

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/connect/sessions", use: list)
        router.delete("/connect/sessions/:id", use: end)
    }

    func list(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request)
            let format = Date.ISO8601FormatStyle()
            let sessions = try await revocation.liveSessions(realm: realm.realmID, userID: caller.userID).map {
                SessionBody(
                    id: $0.familyID.uuidString.lowercased(), clientId: $0.clientID, startedAt: $0.startedAt.formatted(format),
                    scope: $0.scopes.joined(separator: " "), current: $0.familyID == caller.familyID)
            }
            return OAuthResponses.json(sessions)
        }
    }

    func end(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                try await revocation.endSession(realm: realm.realmID, userID: caller.userID, familyID: id, metadata: context.eventMetadata(actor: caller.userID))
            else { return Problem.response("Session.NotFound", status: 404, detail: "No such session.") }
            return Response(status: .noContent)
        }
    }

    private func authorized(_ request: Request) async throws -> (RealmDirectory.Entry, Caller) {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else { throw RequestParsing.Failure.response(ProblemEdge.nativeGrantsDisabled()) }
        return (realm, try await resource.accountCaller(request, realm: realm, issuer: issuer, allowsRecovery: true))
    }
}
