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
                OAuthResponses.json(try await self.admin.realms.list().map { RealmSummary(Id: $0.id, Hosts: $0.hosts, NativeGrantsEnabled: $0.nativeGrants) })
            }
        }
        api.get("realms/:realm") { request, context in
            await self.handle(request, context) { realm in Self.ok(AdminPayloads.realmView(try await self.admin.realms.get(realm)), found: true) }
        }
        api.patch("realms/:realm") { request, context in await self.handle(request, context) { realm in try await self.updateRealm(request, realm) } }
        // Issue 48: the Sign in with Apple key an Apple provider redeems authorization codes with.
        api.put("realms/:realm/federated-providers/:provider/apple-key") { request, context in
            await self.handle(request, context) { realm in
                let body = try await self.decode(
                    FederatedProviderBody.AppleKeyBody.self, request, allowed: FederatedProviderBody.AppleKeyBody.members)
                let key = RealmAdministration.AppleKey(
                    teamID: body.TeamId, keyID: body.KeyId, clientID: body.ClientId, privateKeyPEM: body.PrivateKey, tokenURL: body.TokenUrl)
                let state = try await self.admin.realms.setAppleKey(
                    realm: realm, provider: context.parameters.get("provider") ?? "", key: key, metadata: self.metadata(context))
                return OAuthResponses.json(AdminPayloads.realmView(state))
            }
        }
        api.delete("realms/:realm/federated-providers/:provider/apple-key") { request, context in
            await self.handle(request, context) { realm in
                let state = try await self.admin.realms.removeAppleKey(
                    realm: realm, provider: context.parameters.get("provider") ?? "", metadata: self.metadata(context))
                return OAuthResponses.json(AdminPayloads.realmView(state))
            }
        }
        // Signing keys (issue 41): rotate to a new one; retire a rotated-out one.
        api.post("realms/:realm/signing-keys") { request, context in
            await self.handle(request, context) { realm in
                let body = try await self.decode(NewSigningKey.self, request, allowed: ["Algorithm"])
                guard let algorithm = SigningKeyMaterial.Algorithm(rawValue: body.Algorithm ?? "ES256") else {
                    throw AdminProblem("SigningKey.UnsupportedAlgorithm", "Algorithm is ES256 or RS256.")
                }
                let kid = try await self.admin.realms.rotateSigningKey(realm: realm, algorithm: algorithm, metadata: self.metadata(context))
                return OAuthResponses.json(AdminPayloads.signingKeys(try await self.admin.realms.get(realm)).first { $0.Kid == kid }, status: .created)
            }
        }
        api.post("realms/:realm/signing-keys/:kid/retire") { request, context in
            await self.handle(request, context) { realm in
                let body = try await self.decode(Retirement.self, request, allowed: ["Force"])
                let kid = context.parameters.get("kid") ?? ""
                let retired = try await self.admin.realms.retireSigningKey(realm: realm, kid: kid, force: body.Force ?? false, metadata: self.metadata(context))
                let view = AdminPayloads.signingKeys(try await self.admin.realms.get(realm)).first { $0.Kid == kid }
                return OAuthResponses.json(RetiredKey(Key: view, RetiredNow: retired))
            }
        }
    }

    struct NewSigningKey: Decodable {
        var Algorithm: String?
    }

    struct Retirement: Decodable {
        /// Retire before the overlap has passed (a key believed compromised).
        var Force: Bool?
    }

    struct RetiredKey: Encodable {
        var Key: AdminPayloads.SigningKey?
        /// False when it was retired already.
        var RetiredNow: Bool
    }

    private func createRealm(_ request: Request) async throws -> Response {
        let body = try await decode(AdminPayloads.Realm.self, request, allowed: AdminPayloads.Realm.members)
        guard let id = body.Id else { throw AdminProblem("Request.Invalid", "Id is required.") }
        var settings = RealmSettings(hosts: [], displayName: body.DisplayName ?? id)
        try body.apply(to: &settings)
        let algorithm = try body.SigningAlgorithm.map { name in
            guard let algorithm = SigningKeyMaterial.Algorithm(rawValue: name) else {
                throw AdminProblem("SigningKey.UnsupportedAlgorithm", "SigningAlgorithm is ES256 or RS256.")
            }
            return algorithm
        }
        let state = try await admin.realms.create(id, settings: settings, signingAlgorithm: algorithm, metadata: EventMetadata(actor: "admin:api"))
        return OAuthResponses.json(AdminPayloads.realmView(state), status: .created)
    }

    private func updateRealm(_ request: Request, _ realm: String) async throws -> Response {
        let body = try await decode(AdminPayloads.Realm.self, request, allowed: AdminPayloads.Realm.members.subtracting(["Id", "SigningAlgorithm"]))
        let (state, warning) = try await admin.realms.update(realm, metadata: EventMetadata(actor: "admin:api")) { try body.apply(to: &$0) }
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
