import Foundation
import Hummingbird
import ModgudService

/// The routes `modgud bench floor` measures (issue 49), on a bare Hummingbird router: no
/// middleware, no realm, no rules. Each parses the form body as the token endpoint does
/// (`FormBody`) and answers JSON as it does (`OAuthResponses`):
///
/// - `POST /floor/bare`: only that;
/// - `POST /floor/sign`: and signs one ES256 JWT;
/// - `POST /floor/commit`: and commits one row with group commit;
/// - `POST /floor/grant`: signs and commits: the floor of a grant.
public func buildBenchFloorApplication(floor: BenchFloor, server: ApplicationConfiguration) -> some ApplicationProtocol {
    let router = Router()
    let maxBody = 64 * 1024
    @Sendable func form(_ request: Request) async throws -> String {
        let body = try await request.body.collect(upTo: maxBody)
        guard let form = try? FormBody(Array(body.readableBytesView)), let client = form["client_id"] else {
            throw HTTPError(.badRequest, message: "client_id is required")
        }
        return client
    }
    router.get("/floor/ready") { _, _ in Response(status: .ok) }
    router.post("/floor/bare") { request, _ in
        OAuthResponses.json(BenchFloorAnswer(client_id: try await form(request)))
    }
    router.post("/floor/sign") { request, _ in
        let client = try await form(request)
        return OAuthResponses.json(BenchFloorAnswer(client_id: client, access_token: try await floor.sign(clientID: client, now: Date())))
    }
    router.post("/floor/commit") { request, _ in
        let client = try await form(request)
        try await floor.commit(clientID: client, token: client, now: Date())
        return OAuthResponses.json(BenchFloorAnswer(client_id: client))
    }
    router.post("/floor/grant") { request, _ in
        let client = try await form(request)
        let now = Date()
        let token = try await floor.sign(clientID: client, now: now)
        try await floor.commit(clientID: client, token: token, now: now)
        return OAuthResponses.json(BenchFloorAnswer(client_id: client, access_token: token))
    }
    return Application(router: router, configuration: server)
}

/// What the floor's routes answer: a token response's shape.
struct BenchFloorAnswer: Encodable {
    var client_id: String
    var access_token: String?
    var token_type = "Bearer"
    var expires_in = 900
}
