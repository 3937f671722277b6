import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The admin API under /admin/api. Authenticated by the bootstrap admin token from
/// configuration (any realm), or by an access token of the realm in the path whose scopes
/// include `modgud:admin`. Errors are RFC 7807 problems titled with the error code.
struct AdminController: Sendable {
    let core: ModgudCore
    let admin: AdminService
    let configuration: HTTPConfiguration
    static let adminScope = "modgud:admin"

    func register(on router: Router<ModgudRequestContext>) {
        let api = router.group("admin/api")
        api.post("realms") { request, context in await self.handle(request, context, realm: nil) { try await self.createRealm(request) } }
        api.get("realms") { request, context in
            await self.handle(request, context, realm: nil) {
                OAuthResponses.json(try await self.admin.realms().map { RealmSummary(Id: $0.id, Hosts: $0.hosts, NativeGrantsEnabled: $0.nativeGrants) })
            }
        }
        api.get("realms/:realm") { request, context in
            await self.handle(request, context) { realm in Self.ok(AdminPayloads.realmView(try await self.admin.realm(realm)), found: true) }
        }
        api.patch("realms/:realm") { request, context in await self.handle(request, context) { realm in try await self.updateRealm(request, realm) } }
        api.post("realms/:realm/clients") { request, context in
            await self.handle(request, context) { realm in try await self.createClient(request, realm) }
        }
        api.get("realms/:realm/clients") { request, context in
            await self.handle(request, context) { realm in
                Self.ok(try await self.admin.clients(realm: realm).map { ["Id": $0.id, "Type": $0.type, "Enabled": $0.enabled ? "true" : "false"] }, found: true)
            }
        }
        api.get("realms/:realm/clients/:client") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in
                let state = try await self.admin.client(realm: realm, id: client)
                return Self.ok(AdminPayloads.clientView(state), found: state.exists)
            }
        }
        api.patch("realms/:realm/clients/:client") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in try await self.updateClient(request, realm, client) }
        }
        api.delete("realms/:realm/clients/:client") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in
                try await self.admin.deleteClient(realm: realm, id: client, metadata: self.metadata(context))
                return Response(status: .noContent)
            }
        }
        api.post("realms/:realm/clients/:client/secret") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in
                let secret = try await self.admin.rotateClientSecret(realm: realm, id: client, metadata: self.metadata(context))
                return OAuthResponses.json(["Secret": secret])
            }
        }
        api.post("realms/:realm/users") { request, context in
            await self.handle(request, context) { realm in
                let body = try await self.decode(NewUser.self, request, allowed: NewUser.members)
                let user = try await self.admin.createUser(
                    realm: realm, email: body.Email, firstName: body.FirstName, lastName: body.LastName, username: body.Username,
                    metadata: self.metadata(context))
                return OAuthResponses.json(["Id": user.id.uuidString.lowercased(), "Email": user.email ?? "", "Status": user.status], status: .created)
            }
        }
        api.get("realms/:realm/users") { request, context in
            await self.handle(request, context) { realm in
                Self.ok(
                    try await self.admin.users(realm: realm).map { ["Id": $0.id.uuidString.lowercased(), "Email": $0.email ?? "", "Status": $0.status] },
                    found: true)
            }
        }
        api.delete("realms/:realm/users/:user") { request, context in
            let user = context.parameters.get("user") ?? ""
            let erase = request.uri.queryParameters.get("erase")
            return await self.handle(request, context) { realm in
                switch erase {
                case nil, "false":
                    // DELETE without erasure is the delete action: the account ends, its data stays.
                    guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                    let state = try await self.admin.apply(.delete, realm: realm, userID: id, metadata: self.metadata(context))
                    return Self.ok(["Id": id.uuidString.lowercased(), "Status": state.status.rawValue], found: true)
                case "true":
                    let outcome = try await self.admin.eraseUser(realm: realm, user, metadata: self.metadata(context))
                    return OAuthResponses.json(AdminPayloads.Erasure(outcome))
                default:
                    throw AdminProblem("Request.Invalid", "erase is true or false.")
                }
            }
        }
        api.post("realms/:realm/users/:user/totp") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                let provisioning = try await self.admin.enableTOTP(realm: realm, userID: id, metadata: self.metadata(context))
                return Self.ok(["OtpauthUri": provisioning.uri, "Secret": provisioning.secret], found: true)
            }
        }
        api.delete("realms/:realm/users/:user/totp") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                try await self.admin.disableTOTP(realm: realm, userID: id, metadata: self.metadata(context))
                return Self.ok(["Id": id.uuidString.lowercased(), "TwoFactor": "off"], found: true)
            }
        }
        api.get("realms/:realm/users/:user/passkeys") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                let passkeys = try await self.admin.passkeys(realm: realm, userID: id).map { passkey in
                    [
                        "Id": passkey.id.uuidString.lowercased(), "DisplayName": passkey.displayName, "RpId": passkey.rpID,
                        "CreatedAt": passkey.createdAt.formatted(Date.ISO8601FormatStyle()),
                        "LastUsedAt": passkey.lastUsedAt?.formatted(Date.ISO8601FormatStyle()) ?? "", "Provider": passkey.provider.name,
                    ]
                }
                return Self.ok(passkeys, found: true)
            }
        }
        api.delete("realms/:realm/users/:user/passkeys/:passkey") { request, context in
            let user = context.parameters.get("user") ?? ""
            let passkey = context.parameters.get("passkey").flatMap(UUID.init(uuidString:))
            return await self.handle(request, context) { realm in
                guard let id = try await self.admin.findUser(realm: realm, user), let passkey,
                    try await self.admin.revokePasskey(realm: realm, userID: id, passkeyID: passkey, metadata: self.metadata(context))
                else { throw AdminProblem("Passkey.NotFound", "No such passkey.", status: 404) }
                return Response(status: .noContent)
            }
        }
        api.post("realms/:realm/users/:user/:action") { request, context in
            let user = context.parameters.get("user") ?? ""
            let action = context.parameters.get("action") ?? ""
            return await self.handle(request, context) { realm in
                guard let action = AdminService.UserAction(rawValue: action) else {
                    throw AdminProblem("User.UnknownAction", "The action is disable, enable, logout-everywhere or delete.", status: 404)
                }
                guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                let state = try await self.admin.apply(action, realm: realm, userID: id, metadata: self.metadata(context))
                return Self.ok(["Id": id.uuidString.lowercased(), "Status": state.status.rawValue], found: true)
            }
        }
        api.get("realms/:realm/users/:user/audit") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                guard let id = try await self.admin.findUser(realm: realm, user) else { throw AdminProblem("User.NotFound", "No such user.", status: 404) }
                let entries = try await self.admin.audit(realm: realm, userID: id).map { entry in
                    [
                        "Time": entry.recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), "Event": entry.event,
                        "Detail": entry.detail, "Actor": entry.actor ?? "", "Client": entry.client ?? "", "ClientIP": entry.clientIP ?? "",
                    ]
                }
                return Self.ok(entries, found: true)
            }
        }
    }

    // MARK: Handlers

    private func createRealm(_ request: Request) async throws -> Response {
        let body = try await decode(AdminPayloads.Realm.self, request, allowed: AdminPayloads.Realm.members)
        guard let id = body.Id else { throw AdminProblem("Request.Invalid", "Id is required.") }
        var settings = RealmSettings(hosts: [], displayName: body.DisplayName ?? id)
        try body.apply(to: &settings)
        let state = try await admin.createRealm(id, settings: settings, metadata: EventMetadata(actor: "admin:api"))
        return OAuthResponses.json(AdminPayloads.realmView(state), status: .created)
    }

    private func updateRealm(_ request: Request, _ realm: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Realm.self, request, allowed: AdminPayloads.Realm.members.subtracting(["Id"]))
        let (state, warning) = try await admin.updateRealm(realm, metadata: EventMetadata(actor: "admin:api")) { try body.apply(to: &$0) }
        return OAuthResponses.json(UpdatedRealm(Realm: AdminPayloads.realmView(state), Warning: warning))
    }

    private func createClient(_ request: Request, _ realm: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Client.self, request, allowed: AdminPayloads.Client.members)
        guard let id = body.Id, let typeName = body.Type, let type = ClientType(rawValue: typeName) else {
            throw AdminProblem("Request.Invalid", "Id and Type (public or confidential) are required.")
        }
        var settings = ClientSettings(type: type, grants: [], allowedScopes: [])
        try body.apply(to: &settings)
        let (state, secret) = try await admin.createClient(realm: realm, id: id, settings: settings, metadata: EventMetadata(actor: "admin:api"))
        return OAuthResponses.json(CreatedClient(Client: AdminPayloads.clientView(state), Secret: secret), status: .created)
    }

    private func updateClient(_ request: Request, _ realm: String, _ id: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Client.self, request, allowed: AdminPayloads.Client.members.subtracting(["Id", "Type"]))
        let (state, warning) = try await admin.updateClient(realm: realm, id: id, metadata: EventMetadata(actor: "admin:api")) {
            try body.apply(to: &$0)
        }
        return OAuthResponses.json(UpdatedClient(Client: AdminPayloads.clientView(state), Warning: warning))
    }

    struct RealmSummary: Encodable {
        var Id: String
        var Hosts: [String]
        var NativeGrantsEnabled: Bool
    }

    /// `POST …/users`: an invited (confirmed) user.
    struct NewUser: Decodable {
        var Email: String
        var FirstName: String?
        var LastName: String?
        var Username: String?
        static let members: Set<String> = ["Email", "FirstName", "LastName", "Username"]
    }

    struct UpdatedRealm: Encodable {
        var Realm: AdminPayloads.Realm
        /// Set when passkeys stop working (the primary domain changed).
        var Warning: String?
    }

    struct CreatedClient: Encodable {
        var Client: AdminPayloads.Client
        /// Shown once: only its hash is kept.
        var Secret: String?
    }

    struct UpdatedClient: Encodable {
        var Client: AdminPayloads.Client
        var Warning: String?
    }

    // MARK: Plumbing

    private func decode<T: Decodable>(_ type: T.Type, _ request: Request, allowed: Set<String>) async throws -> T {
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

    private func metadata(_ context: ModgudRequestContext) -> EventMetadata {
        EventMetadata(correlationID: context.id, actor: "admin:api")
    }

    /// Authenticates, resolves the realm from the path (`realm: nil` for realm creation, which
    /// needs the bootstrap token), runs the handler and maps its errors.
    private func handle(
        _ request: Request, _ context: ModgudRequestContext, realm path: String?? = .none,
        _ body: (String) async throws -> Response
    ) async -> Response {
        let realm = path ?? context.parameters.get("realm")
        do {
            try await authorize(request, realm: realm)
            return try await body(realm ?? "")
        } catch let problem as AdminProblem {
            return Problem.response(problem.title, status: problem.status, detail: problem.detail)
        } catch let error as DomainError {
            let status = error.code.hasSuffix(".NotFound") ? 404 : (error.code.hasSuffix(".AlreadyExists") || error.code.hasSuffix(".LegacyPlaintext") ? 409 : 400)
            return Problem.response(error.code, status: status, detail: error.message)
        } catch let error as EventStoreError {
            if case .inlineProjectionFailed(let projection, _) = error {
                let title = projection == "realm_directory" ? "Realm.HostTaken" : "Request.Conflict"
                return Problem.response(title, status: 409, detail: "A unique value is already taken.")
            }
            return Problem.response("Request.Conflict", status: 409, detail: "\(error)")
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "admin")
        }
    }

    private func handle(_ request: Request, _ context: ModgudRequestContext, realm: String?, _ body: () async throws -> Response) async -> Response {
        await handle(request, context, realm: .some(realm)) { _ in try await body() }
    }

    private func authorize(_ request: Request, realm: String?) async throws {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw AdminProblem("Admin.Unauthorized", "A bearer token is required.", status: 401)
        }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if let bootstrap = configuration.adminToken, ConstantTime.equal(token, bootstrap) { return }
        guard let realm else { throw AdminProblem("Admin.Forbidden", "Only the bootstrap admin token creates realms.", status: 403) }
        let result = try await core.tokenService.introspect(realm: realm, token: token)
        guard result.active else { throw AdminProblem("Admin.Unauthorized", "The token is not valid.", status: 401) }
        guard (result.scope ?? "").split(separator: " ").contains(Substring(Self.adminScope)) else {
            throw AdminProblem("Admin.Forbidden", "The token lacks the \(Self.adminScope) scope.", status: 403)
        }
    }

    static func ok(_ value: some Encodable, found: Bool) -> Response {
        found ? OAuthResponses.json(value) : Problem.response("Resource.NotFound", status: 404, detail: "Not found.")
    }
}
