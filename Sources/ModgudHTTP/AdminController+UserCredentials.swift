import Foundation
import Hummingbird
import ModgudService

/// A user's second factor and passkeys in the admin API.
extension AdminController {
    func registerUserCredentials(on api: RouterGroup<ModgudRequestContext>) {
        api.post("realms/:realm/users/:user/totp") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let provisioning = try await self.admin.users.enableTOTP(
                    realm: realm, userID: try await self.userID(user, realm: realm), metadata: self.metadata(context))
                return Self.ok(["OtpauthUri": provisioning.uri, "Secret": provisioning.secret], found: true)
            }
        }
        api.delete("realms/:realm/users/:user/totp") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let id = try await self.userID(user, realm: realm)
                try await self.admin.users.disableTOTP(realm: realm, userID: id, metadata: self.metadata(context))
                return Self.ok(["Id": id.uuidString.lowercased(), "TwoFactor": "off"], found: true)
            }
        }
        // Issue 46: how many recovery codes are left, and revoking them (never a code).
        api.get("realms/:realm/users/:user/recovery-codes") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let status = try await self.admin.users.recoveryCodeStatus(realm: realm, userID: try await self.userID(user, realm: realm))
                return Self.ok(["Remaining": status.remaining], found: true)
            }
        }
        api.delete("realms/:realm/users/:user/recovery-codes") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let id = try await self.userID(user, realm: realm)
                _ = try await self.admin.users.revokeRecoveryCodes(realm: realm, userID: id, metadata: self.metadata(context))
                return Response(status: .noContent)
            }
        }
        api.get("realms/:realm/users/:user/passkeys") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let passkeys = try await self.admin.users.passkeys(realm: realm, userID: try await self.userID(user, realm: realm)).map { passkey in
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
                guard let id = try await self.admin.users.find(realm: realm, user), let passkey,
                    try await self.admin.users.revokePasskey(realm: realm, userID: id, passkeyID: passkey, metadata: self.metadata(context))
                else { throw AdminProblem("Passkey.NotFound", "No such passkey.", status: 404) }
                return Response(status: .noContent)
            }
        }
    }
}
