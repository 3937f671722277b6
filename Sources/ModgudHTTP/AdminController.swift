import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The admin API under /admin/api. Authenticated by the bootstrap admin token from
/// configuration (any realm), or by an access token of the realm in the path whose scopes
/// include `modgud:admin`. Errors are RFC 7807 problems titled with the error code.
struct AdminController: Sendable {
    let introspection: TokenIntrospection
    let admin: Administration
    let configuration: HTTPConfiguration
    static let adminScope = "modgud:admin"

    func register(on router: Router<ModgudRequestContext>) {
        let api = router.group("admin/api")
        registerRealms(on: api)
        registerClients(on: api)
        registerUsers(on: api)
        registerUserCredentials(on: api)
        registerAuditLog(on: api)
    }

    // MARK: Plumbing

    func decode<T: Decodable>(_ type: T.Type, _ request: Request, allowed: Set<String>) async throws -> T {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            throw AdminProblem("Request.UnsupportedMediaType", "Send application/json.", status: 415)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw AdminProblem("Request.TooLarge", "The body is larger than \(configuration.maxBodyBytes) bytes.", status: 413)
        }
        do {
            return try StrictJSON.decode(type, from: Array(buffer.readableBytesView), allowed: allowed)
        } catch .malformed {
            throw AdminProblem("Request.MalformedJSON", "The body is not a JSON object.")
        } catch .unknownMember(let name) {
            throw AdminProblem("Request.UnknownMember", "\(name) is not a member of this object.")
        } catch .invalid(let detail) {
            throw AdminProblem("Request.Invalid", detail)
        } catch .nulCharacter {
            throw AdminProblem("Request.InvalidText", "Text must not contain NUL characters.")
        }
    }

    func metadata(_ context: ModgudRequestContext) -> EventMetadata {
        EventMetadata(correlationID: context.id, actor: "admin:api")
    }

    /// The user named in the path (an id or an address), or 404 `User.NotFound`.
    func userID(_ key: String, realm: String) async throws -> UUID {
        guard let id = try await admin.users.find(realm: realm, key) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
        return id
    }

    /// Authenticates, resolves the realm from the path (`realm: nil` for realm creation, which
    /// needs the bootstrap token), runs the handler and maps its errors.
    func handle(
        _ request: Request, _ context: ModgudRequestContext, realm path: String?? = .none,
        _ body: (String) async throws -> Response
    ) async -> Response {
        let realm = path ?? context.parameters.get("realm")
        do {
            try await authorize(request, realm: realm)
            return try await body(realm ?? "")
        } catch let problem as AdminProblem {
            return Problem.response(problem.title, status: problem.status, detail: problem.detail)
        } catch let refused as ServiceRefusal {
            return refused.problem
        } catch let error as SigningKeyRingError {
            return Problem.response("SigningKey.Unavailable", status: 503, detail: error.description)
        } catch let error as EventStoreError {
            return Problem.response("Request.Conflict", status: 409, detail: "\(error)")
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "admin")
        }
    }

    func handle(_ request: Request, _ context: ModgudRequestContext, realm: String?, _ body: () async throws -> Response) async -> Response {
        await handle(request, context, realm: .some(realm)) { _ in try await body() }
    }

    private func authorize(_ request: Request, realm: String?) async throws {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw AdminProblem("Admin.Unauthorized", "A bearer token is required.", status: 401)
        }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if let bootstrap = configuration.adminToken, ConstantTime.equal(token, bootstrap) { return }
        guard let realm else { throw AdminProblem("Admin.Forbidden", "Only the bootstrap admin token creates realms.", status: 403) }
        let result = try await introspection.introspect(realm: realm, token: token)
        guard result.active else { throw AdminProblem("Admin.Unauthorized", "The token is not valid.", status: 401) }
        guard (result.scope ?? "").split(separator: " ").contains(Substring(Self.adminScope)) else {
            throw AdminProblem("Admin.Forbidden", "The token lacks the \(Self.adminScope) scope.", status: 403)
        }
    }

    static func ok(_ value: some Encodable, found: Bool) -> Response {
        found ? OAuthResponses.json(value) : Problem.response("Resource.NotFound", status: 404, detail: "Not found.")
    }
}
