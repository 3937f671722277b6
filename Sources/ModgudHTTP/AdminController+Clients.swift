import EventSourcing
import Hummingbird
import ModgudDomain
import ModgudService

/// The client routes of the admin API.
extension AdminController {
    func registerClients(on api: RouterGroup<ModgudRequestContext>) {
        api.post("realms/:realm/clients") { request, context in
            await self.handle(request, context) { realm in try await self.createClient(request, realm) }
        }
        api.get("realms/:realm/clients") { request, context in
            await self.handle(request, context) { realm in
                Self.ok(try await self.admin.clients.list(realm: realm).map { ClientSummary(Id: $0.id, Type: $0.type, Enabled: $0.enabled) }, found: true)
            }
        }
        api.get("realms/:realm/clients/:client") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in
                let state = try await self.admin.clients.get(realm: realm, id: client)
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
                try await self.admin.clients.delete(realm: realm, id: client, metadata: self.metadata(context))
                return Response(status: .noContent)
            }
        }
        api.post("realms/:realm/clients/:client/secret") { request, context in
            let client = context.parameters.get("client") ?? ""
            return await self.handle(request, context) { realm in
                let secret = try await self.admin.clients.rotateSecret(realm: realm, id: client, metadata: self.metadata(context))
                return OAuthResponses.json(["Secret": secret])
            }
        }
        registerPlayIntegrity(on: api)
    }

    /// Issue 47: the Play Console's keys for one of a client's Android apps.
    private func registerPlayIntegrity(on api: RouterGroup<ModgudRequestContext>) {
        api.put("realms/:realm/clients/:client/play-integrity/:package") { request, context in
            let client = context.parameters.get("client") ?? "", package = context.parameters.get("package") ?? ""
            return await self.handle(request, context) { realm in
                let body = try await self.decode(AdminPayloads.PlayIntegrityKeysBody.self, request, allowed: AdminPayloads.PlayIntegrityKeysBody.members)
                let state = try await self.admin.clients.setPlayIntegrityKeys(
                    realm: realm, id: client, packageName: package, decryptionKey: body.DecryptionKey, verificationKey: body.VerificationKey,
                    metadata: self.metadata(context))
                return OAuthResponses.json(AdminPayloads.clientView(state))
            }
        }
        api.delete("realms/:realm/clients/:client/play-integrity/:package") { request, context in
            let client = context.parameters.get("client") ?? "", package = context.parameters.get("package") ?? ""
            return await self.handle(request, context) { realm in
                let state = try await self.admin.clients.removePlayIntegrityKeys(
                    realm: realm, id: client, packageName: package, metadata: self.metadata(context))
                return OAuthResponses.json(AdminPayloads.clientView(state))
            }
        }
    }

    private func createClient(_ request: Request, _ realm: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Client.self, request, allowed: AdminPayloads.Client.members)
        guard let id = body.Id, let typeName = body.Type, let type = ClientType(rawValue: typeName) else {
            throw AdminProblem("Request.Invalid", "Id and Type (public or confidential) are required.")
        }
        var settings = ClientSettings(type: type, grants: [], allowedScopes: [])
        try body.apply(to: &settings)
        let (state, secret) = try await admin.clients.create(realm: realm, id: id, settings: settings, metadata: EventMetadata(actor: "admin:api"))
        return OAuthResponses.json(CreatedClient(Client: AdminPayloads.clientView(state), Secret: secret), status: .created)
    }

    private func updateClient(_ request: Request, _ realm: String, _ id: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Client.self, request, allowed: AdminPayloads.Client.members.subtracting(["Id", "Type"]))
        let (state, warning) = try await admin.clients.update(realm: realm, id: id, metadata: EventMetadata(actor: "admin:api")) {
            try body.apply(to: &$0)
        }
        return OAuthResponses.json(UpdatedClient(Client: AdminPayloads.clientView(state), Warning: warning))
    }

    /// One row of `GET …/clients`.
    struct ClientSummary: Encodable {
        var Id: String
        var `Type`: String
        var Enabled: Bool
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
}
