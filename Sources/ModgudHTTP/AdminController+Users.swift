import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// The user routes of the admin API: invite, list, the account verbs, erasure and the audit.
extension AdminController {
    func registerUsers(on api: RouterGroup<ModgudRequestContext>) {
        api.post("realms/:realm/users") { request, context in
            await self.handle(request, context) { realm in
                let body = try await self.decode(NewUser.self, request, allowed: NewUser.members)
                let user = try await self.admin.users.create(
                    realm: realm, email: body.Email, firstName: body.FirstName, lastName: body.LastName, username: body.Username,
                    metadata: self.metadata(context))
                return OAuthResponses.json(["Id": user.id.uuidString.lowercased(), "Email": user.email ?? "", "Status": user.status], status: .created)
            }
        }
        api.get("realms/:realm/users") { request, context in
            await self.handle(request, context) { realm in
                Self.ok(
                    try await self.admin.users.list(realm: realm).map { ["Id": $0.id.uuidString.lowercased(), "Email": $0.email ?? "", "Status": $0.status] },
                    found: true)
            }
        }
        api.delete("realms/:realm/users/:user") { request, context in
            let user = context.parameters.get("user") ?? ""
            let erase: String? = request.uri.queryParameters.get("erase").map { String($0) }
            return await self.handle(request, context) { realm in try await self.deleteUser(user, erase: erase, realm: realm, context) }
        }
        api.post("realms/:realm/users/:user/:action") { request, context in
            let user = context.parameters.get("user") ?? ""
            let action = context.parameters.get("action") ?? ""
            return await self.handle(request, context) { realm in
                guard let action = UserAdministration.UserAction(rawValue: action) else {
                    throw AdminProblem("User.UnknownAction", "The action is disable, enable, logout-everywhere or delete.", status: 404)
                }
                let id = try await self.userID(user, realm: realm)
                let state = try await self.admin.users.apply(action, realm: realm, userID: id, metadata: self.metadata(context))
                return Self.ok(["Id": id.uuidString.lowercased(), "Status": state.status.rawValue], found: true)
            }
        }
        api.get("realms/:realm/users/:user/audit") { request, context in
            let user = context.parameters.get("user") ?? ""
            return await self.handle(request, context) { realm in
                let entries = try await self.admin.audit.userHistory(realm: realm, userID: try await self.userID(user, realm: realm)).map { entry in
                    [
                        "Time": entry.recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), "Event": entry.event,
                        "Detail": entry.detail, "Actor": entry.actor ?? "", "Client": entry.client ?? "", "ClientIP": entry.clientIP ?? "",
                    ]
                }
                return Self.ok(entries, found: true)
            }
        }
    }

    /// `DELETE …/users/{user}`: the delete action (the account ends, its data stays), or with
    /// `?erase=true` the erasure.
    private func deleteUser(_ user: String, erase: String?, realm: String, _ context: ModgudRequestContext) async throws -> Response {
        switch erase {
        case nil, "false":
            let id = try await userID(user, realm: realm)
            let state = try await admin.users.apply(.delete, realm: realm, userID: id, metadata: metadata(context))
            return Self.ok(["Id": id.uuidString.lowercased(), "Status": state.status.rawValue], found: true)
        case "true":
            let outcome = try await admin.users.erase(realm: realm, user, metadata: metadata(context))
            return OAuthResponses.json(AdminPayloads.Erasure(outcome))
        default:
            throw AdminProblem("Request.Invalid", "erase is true or false.")
        }
    }

    /// `POST …/users`: an invited (confirmed) user.
    struct NewUser: Decodable {
        var Email: String
        var FirstName: String?
        var LastName: String?
        var Username: String?
        static let members: Set<String> = ["Email", "FirstName", "LastName", "Username"]
    }
}
