import EventSourcing
import Hummingbird
import ModgudDomain
import ModgudService

/// The realm routes of the admin API.
extension AdminController {
    func registerRealms(on api: RouterGroup<ModgudRequestContext>) {
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
    }

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

    struct RealmSummary: Encodable {
        var Id: String
        var Hosts: [String]
        var NativeGrantsEnabled: Bool
    }

    struct UpdatedRealm: Encodable {
        var Realm: AdminPayloads.Realm
        /// Set when passkeys stop working (the primary domain changed).
        var Warning: String?
    }
}
