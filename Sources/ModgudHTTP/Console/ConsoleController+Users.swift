import EventSourcing
import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Users (issue 31): find by address or id, one user's profile, passkeys and sessions, and the
/// operator's actions on them, each an event with the operator as actor.
extension ConsoleController {
    static let usersPerPage = 50

    func registerUsers(on router: Router<ModgudRequestContext>) {
        router.get("console/realms/:realm/users") { request, context in
            await page(request, context) { _ in
                let realm = context.parameters.get("realm") ?? ""
                let parameters = request.uri.queryParameters
                let query = parameters.get("q")?.trimmingCharacters(in: .whitespaces) ?? ""
                // Found by address (its blind index) or id: straight to the user.
                if !query.isEmpty, let id = try await admin.users.find(realm: realm, query), try await admin.users.exists(realm: realm, id: id) {
                    return .redirect(userPath(realm, id))
                }
                if !query.isEmpty {
                    return try await searchPage(realm: realm, query: query, after: parameters.get("from").flatMap(UUID.init(uuidString:)))
                }
                let page: UserAdministration.UserPage =
                    if let after = parameters.get("after").flatMap(UUID.init(uuidString:)) { .after(after) }
                    else if let before = parameters.get("before").flatMap(UUID.init(uuidString:)) { .before(before) }
                    else { .first }
                let order = parameters.get("sort").flatMap(UserListOrder.init(rawValue:)) ?? .registered
                return try await usersPage(realm: realm, page: page, order: order)
            }
        }
        router.get("console/realms/:realm/users/:user") { request, context in
            await page(request, context) { _ in try await userPage(context) }
        }
        router.get("console/realms/:realm/users/:user/erase") { request, context in
            await page(request, context) { _ in try await erasePage(context) }
        }
        router.get("console/realms/:realm/users/:user/audit") { request, context in
            await page(request, context) { _ in
                let (realm, id) = try await target(context)
                return try await userHistoryPage(request, realm: realm, id: id)
            }
        }
        registerUserActions(on: router)
        registerAccountActions(on: router)
    }

    private func registerUserActions(on router: Router<ModgudRequestContext>) {
        let actions: [(String, UserAdministration.UserAction)] = [("disable", .disable), ("enable", .enable), ("sessions/revoke-all", .logoutEverywhere)]
        for (path, verb) in actions {
            router.post("console/realms/:realm/users/:user/\(path)") { request, context in
                await action(request, context) { session, _ in
                    let (realm, id) = try await target(context)
                    _ = try await admin.users.apply(verb, realm: realm, userID: id, metadata: metadata(session, context))
                    return ConsoleResponse.redirect(userPath(realm, id))
                }
            }
        }
        // One of the user's sessions or passkeys, by id: false from the service means not theirs.
        let removals: [(String, String, @Sendable (Administration, String, UUID, UUID, EventMetadata) async throws -> Bool)] = [
            ("sessions/:item/revoke", "session", { try await $0.users.revokeSession(realm: $1, userID: $2, familyID: $3, metadata: $4) }),
            ("passkeys/:item/delete", "passkey", { try await $0.users.revokePasskey(realm: $1, userID: $2, passkeyID: $3, metadata: $4) }),
        ]
        for (path, what, remove) in removals {
            router.post("console/realms/:realm/users/:user/\(path)") { request, context in
                await action(request, context) { session, _ in
                    let (realm, id) = try await target(context)
                    guard let item = UUID(uuidString: context.parameters.get("item") ?? ""),
                        try await remove(admin, realm, id, item, metadata(session, context))
                    else { throw ConsoleRefusal.notFound(what) }
                    return ConsoleResponse.redirect(userPath(realm, id))
                }
            }
        }
        router.post("console/realms/:realm/users/:user/erase") { request, context in
            await action(request, context) { session, form in
                let (realm, id) = try await target(context)
                guard form["confirm"]?.trimmingCharacters(in: .whitespaces).lowercased() == "erase" else {
                    var page = try await erasePage(context)
                    page.error = "Type erase to confirm; nothing was done."
                    page.status = .badRequest
                    return try await render(page, session: session, started: .now)
                }
                _ = try await admin.users.erase(realm: realm, id.uuidString, metadata: metadata(session, context))
                return ConsoleResponse.redirect(userPath(realm, id))
            }
        }
    }

    /// A page of 50 in the chosen order, by keyset; one more is read to know whether the list
    /// goes on in the direction of travel.
    private func usersPage(realm: String, page: UserAdministration.UserPage, order: UserListOrder) async throws -> ConsolePage {
        guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
        let total = try await admin.users.count(realm: realm)
        var users = try await admin.users.list(realm: realm, limit: Self.usersPerPage + 1, page: page, order: order)
        let more = users.count > Self.usersPerPage
        var (hasPrevious, hasNext) = (false, false)
        switch page {
        case .first: hasNext = more
        case .after: (hasPrevious, hasNext) = (true, more)
        case .before: (hasPrevious, hasNext) = (more, true)
        }
        if more, case .before = page { users.removeFirst() } else if more { users.removeLast() }
        var values = Self.userListValues(realm: realm, users: users, order: order)
        values["total"] = ConsoleFormat.count(total)
        if hasPrevious, let first = users.first { values["previous"] = "before=\(first.id.uuidString.lowercased())&sort=\(order.rawValue)" }
        if hasNext, let last = users.last { values["next"] = "after=\(last.id.uuidString.lowercased())&sort=\(order.rawValue)" }
        return ConsolePage(template: "users", title: "Users of \(realm)", values: values, section: "realms", crumbs: Array(userCrumbs(realm).dropLast()))
    }

    /// The users whose address starts with the query (`UserAdministration.search`): a bounded
    /// look through the realm, with a link to look further.
    private func searchPage(realm: String, query: String, after: UUID?) async throws -> ConsolePage {
        guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
        let total = try await admin.users.count(realm: realm)
        let found = try await admin.users.search(realm: realm, addressPrefix: query, after: after, limit: Self.usersPerPage)
        var values = Self.userListValues(realm: realm, users: found.matches, order: .registered)
        values["total"] = ConsoleFormat.count(total)
        values["query"] = query
        values["searched"] = ["scanned": ConsoleFormat.count(found.scanned), "resumed": after != nil]
        if let resume = found.resumeAfter {
            var further = URLComponents()
            further.queryItems = [URLQueryItem(name: "q", value: query), URLQueryItem(name: "from", value: resume.uuidString.lowercased())]
            values["further"] = further.percentEncodedQuery ?? ""
        }
        return ConsolePage(
            template: "users", title: "Users of \(realm) whose address starts with \(query)", values: values, section: "realms",
            crumbs: Array(userCrumbs(realm).dropLast()))
    }

    private static func userListValues(realm: String, users: [UserAdministration.UserSummary], order: UserListOrder) -> [String: Any] {
        let orders: [(UserListOrder, String)] = [(.registered, "registration, oldest first"), (.newest, "registration, newest first"), (.lastSignIn, "last sign-in")]
        return [
            "realm": realm,
            "orders": orders.map { ["value": $0.0.rawValue, "label": $0.1, "selected": $0.0 == order] as [String: Any] },
            "users": users.map {
                [
                    "id": $0.id.uuidString.lowercased(), "email": $0.email ?? "[erased]", "status": $0.status,
                    "registered": $0.registeredAt.map(ConsoleFormat.time) ?? "-", "lastSignIn": $0.lastSignInAt.map(ConsoleFormat.time) ?? "never",
                ]
            },
        ]
    }

    private func userPage(_ context: ModgudRequestContext) async throws -> ConsolePage {
        let (realm, id) = try await target(context)
        let (state, profile) = try await admin.users.profile(realm: realm, userID: id)
        let erased = state.status == .erased
        let name = [profile.firstName, profile.lastName].compactMap { $0 }.joined(separator: " ")
        let facts: [[String: String]] = [
            ["label": "User id", "value": id.uuidString.lowercased()],
            ["label": "Email", "value": erased ? "[erased]" : "\(profile.email ?? "-")\(profile.emailConfirmed ? " (confirmed)" : " (unconfirmed)")"],
            ["label": "Name", "value": erased ? "[erased]" : (name.isEmpty ? "-" : name)],
            ["label": "Username", "value": erased ? "[erased]" : profile.username ?? "-"],
            ["label": "Status", "value": state.status.rawValue],
            ["label": "Two-factor", "value": state.encryptedTOTPSecret == nil ? "off" : "on"],
            ["label": "Recovery codes", "value": state.recoveryCodeSet == nil ? "none" : "\(state.recoveryCodesLeft) of 10 left"],
            ["label": "Roles", "value": state.roles.isEmpty ? "-" : state.roles.joined(separator: ", ")],
            ["label": "Registered via", "value": state.registeredVia ?? "-"],
        ]
        let passkeys = Self.passkeyRows(try await admin.users.passkeys(realm: realm, userID: id))
        let kinds = try await providerKinds(realm)
        let identities = try await admin.users.identities(realm: realm, userID: id).map {
            ["provider": $0.provider, "kind": kinds[$0.provider] ?? "(no longer configured)", "linked": ConsoleFormat.time($0.linkedAt)]
        }
        let listed = try await admin.users.sessions(realm: realm, userID: id)
        let activity = try await admin.users.sessionActivity(realm: realm, userID: id, families: listed.map(\.familyID))
        let sessions = listed.map { session -> [String: Any] in
            let used = activity[session.familyID]
            return [
                "id": session.familyID.uuidString.lowercased(), "client": session.clientID, "scopes": session.scopes.joined(separator: " "),
                "started": ConsoleFormat.time(session.startedAt), "live": session.live, "ended": Self.endedReason(session.endedBecause),
                "device": UserAgentLabel.short(used?.lastUserAgent), "userAgent": used?.lastUserAgent ?? "",
                "firstAddress": used?.firstAddress ?? "-", "lastAddress": used?.lastAddress ?? "-",
                "lastUsed": used.map { ConsoleFormat.time($0.lastUsedAt) } ?? "-",
                "expires": session.live ? (used?.expiresAt.map(ConsoleFormat.time) ?? "-") : "-",
            ]
        }
        let live = state.status == .active || state.status == .disabled
        return ConsolePage(
            template: "user", title: erased ? "[erased]" : (profile.email ?? id.uuidString.lowercased()),
            values: [
                "realm": realm, "id": id.uuidString.lowercased(), "userID": id.uuidString.lowercased(), "facts": facts, "passkeys": passkeys, "identities": identities,
                "sessions": sessions, "live": live, "active": state.status == .active, "tombstone": erased,
                "roles": state.roles, "totp": state.encryptedTOTPSecret != nil,
                "hasRecoveryCodes": state.recoveryCodeSet != nil, "recoveryCodes": state.recoveryCodesLeft, "username": profile.username ?? "", "firstName": profile.firstName ?? "",
                "lastName": profile.lastName ?? "",
            ], section: "realms", crumbs: userCrumbs(realm))
    }

    /// Each of the realm's providers' kind, by id.
    private func providerKinds(_ realm: String) async throws -> [String: String] {
        let providers = try await admin.realms.get(realm).settings?.federatedProviders ?? []
        return Dictionary(providers.map { ($0.id, $0.kind.rawValue) }, uniquingKeysWith: { first, _ in first })
    }

    private func erasePage(_ context: ModgudRequestContext) async throws -> ConsolePage {
        let (realm, id) = try await target(context)
        let (state, profile) = try await admin.users.profile(realm: realm, userID: id)
        guard state.status != .erased else { throw ConsoleRefusal.badForm("This user is erased already.") }
        let liveSessions = try await admin.users.sessions(realm: realm, userID: id).filter(\.live).count
        let passkeys = try await admin.users.passkeys(realm: realm, userID: id).count
        // The subject is named from its own record (issue 43: never from the signed-in operator's).
        let name = [profile.firstName, profile.lastName].compactMap { $0 }.joined(separator: " ")
        return ConsolePage(
            template: "user-erase", title: "Erase a user",
            values: [
                "realm": realm, "id": id.uuidString.lowercased(), "subjectEmail": profile.email ?? "(no address)", "subjectName": name,
                "liveSessions": liveSessions, "passkeyCount": passkeys,
            ],
            section: "realms", crumbs: userCrumbs(realm) + [(profile.email ?? "user", userPath(realm, id))])
    }

    /// Why a session ended, in words (issue 43: the reason codes alone were unexplained).
    static func endedReason(_ code: String?) -> String {
        switch code.flatMap(RevocationReason.init(rawValue:)) {
        case .reuse: "a spent refresh token was presented again (possible theft; the whole session ended)"
        case .codeReuse: "its authorization code was presented again (possible theft; the whole session ended)"
        case .logout: "signed out by the app or the user"
        case .stamp: "the account's security stamp moved on (sign out everywhere, disable, or a credential change)"
        case .admin: "revoked by an operator"
        case .erased: "the person was erased"
        case .deviceSignOut: "signed out on the device (Native SSO): every app there signed out together"
        case .providerRevoked: "the person revoked the app at the sign-in provider (Apple), or deleted that account"
        case nil: code ?? "-"
        }
    }

    /// Passkeys as the tables show them: provider name and icon (the AAGUID data ships icons as data: URLs).
    static func passkeyRows(_ passkeys: [PasskeyService.Summary]) -> [[String: Any]] {
        passkeys.map { passkey in
            var row: [String: Any] = [
                "id": passkey.id.uuidString.lowercased(), "name": passkey.displayName, "provider": passkey.provider.name, "rpID": passkey.rpID,
                "created": ConsoleFormat.time(passkey.createdAt), "lastUsed": ConsoleFormat.time(passkey.lastUsedAt),
            ]
            if let icon = passkey.provider.iconLight, icon.hasPrefix("data:image/") { row["icon"] = icon }
            return row
        }
    }

    /// The realm and user named in the path; 404 for a user the realm does not have.
    func target(_ context: ModgudRequestContext) async throws -> (String, UUID) {
        let realm = context.parameters.get("realm") ?? ""
        guard let id = UUID(uuidString: context.parameters.get("user") ?? ""), try await admin.users.exists(realm: realm, id: id) else {
            throw ConsoleRefusal.notFound("user")
        }
        return (realm, id)
    }

    func userPath(_ realm: String, _ id: UUID) -> String { "/console/realms/\(realm)/users/\(id.uuidString.lowercased())" }

    func userCrumbs(_ realm: String) -> [(String, String)] {
        [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)"), ("Users", "/console/realms/\(realm)/users")]
    }
}
