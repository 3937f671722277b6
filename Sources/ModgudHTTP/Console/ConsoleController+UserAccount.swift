import Foundation
import Hummingbird
import ModgudService

/// Running an account from the console (issue 43): names, roles, two-factor and recovery codes
/// (issue 46), each an event
/// with the operator as actor, behind the session's CSRF token.
extension ConsoleController {
    func registerAccountActions(on router: Router<ModgudRequestContext>) {
        router.post("console/realms/:realm/users/:user/profile") { request, context in
            await action(request, context) { session, form in
                let (realm, id) = try await target(context)
                _ = try await admin.users.changeProfile(
                    realm: realm, userID: id, username: form["username"], firstName: form["first_name"], lastName: form["last_name"],
                    metadata: metadata(session, context))
                return ConsoleResponse.redirect(userPath(realm, id))
            }
        }
        for (verb, granted) in [("grant", true), ("revoke", false)] {
            router.post("console/realms/:realm/users/:user/roles/\(verb)") { request, context in
                await action(request, context) { session, form in
                    let (realm, id) = try await target(context)
                    let role = (form["role"] ?? "").trimmingCharacters(in: .whitespaces)
                    guard !role.isEmpty else { throw ConsoleRefusal.badForm("Name the role.") }
                    _ = try await admin.users.setRole(role, granted: granted, realm: realm, userID: id, metadata: metadata(session, context))
                    return ConsoleResponse.redirect(userPath(realm, id))
                }
            }
        }
        router.post("console/realms/:realm/users/:user/two-factor/reset") { request, context in
            await action(request, context) { session, _ in
                let (realm, id) = try await target(context)
                try await admin.users.disableTOTP(realm: realm, userID: id, metadata: metadata(session, context))
                return ConsoleResponse.redirect(userPath(realm, id))
            }
        }
        // Issue 48: a provider account no longer signs the person in.
        router.post("console/realms/:realm/users/:user/identities/:provider/unlink") { request, context in
            await action(request, context) { session, _ in
                let (realm, id) = try await target(context)
                try await admin.users.unlinkIdentity(
                    realm: realm, userID: id, provider: context.parameters.get("provider") ?? "", metadata: metadata(session, context))
                return ConsoleResponse.redirect(userPath(realm, id))
            }
        }
        // Issue 46: a person's recovery codes stop working (a lost printout).
        router.post("console/realms/:realm/users/:user/recovery-codes/revoke") { request, context in
            await action(request, context) { session, _ in
                let (realm, id) = try await target(context)
                _ = try await admin.users.revokeRecoveryCodes(realm: realm, userID: id, metadata: metadata(session, context))
                return ConsoleResponse.redirect(userPath(realm, id))
            }
        }
    }
}
