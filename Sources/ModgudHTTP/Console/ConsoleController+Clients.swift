import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Clients: list, create, edit, rotate the secret, enable and disable, with a preview of the
/// app-association files the realm serves (issue 31).
extension ConsoleController {
    func registerClients(on router: Router<ModgudRequestContext>) {
        router.get("console/realms/:realm/clients") { request, context in
            await page(request, context) { _ in
                let realm = context.parameters.get("realm") ?? ""
                guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
                let clients = try await admin.clients.list(realm: realm).map { ["id": $0.id, "type": $0.type, "enabled": $0.enabled] as [String: Any] }
                return ConsolePage(
                    template: "clients", title: "Clients of \(realm)", values: ["realm": realm, "clients": clients], section: "realms",
                    crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)")])
            }
        }
        router.get("console/realms/:realm/clients/new") { request, context in
            await page(request, context) { _ in
                let realm = context.parameters.get("realm") ?? ""
                return newClientPage(realm, form: ConsoleClientForm.values(nil, nativeGrants: try await nativeGrantsOn(realm)))
            }
        }
        router.post("console/realms/:realm/clients/new") { request, context in
            await action(request, context) { session, form in
                let realm = context.parameters.get("realm") ?? ""
                let id = (form["client_id"] ?? "").trimmingCharacters(in: .whitespaces)
                var settings = ClientSettings(type: form["type"] == "confidential" ? .confidential : .public, grants: [], allowedScopes: [])
                let nativeGrants = try await nativeGrantsOn(realm)
                do {
                    try ConsoleClientForm.apply(form, to: &settings, nativeGrants: nativeGrants)
                    let (_, secret) = try await admin.clients.create(realm: realm, id: id, settings: settings, metadata: metadata(session, context))
                    var page = try await clientPage(realm: realm, id: id)
                    page.values["secret"] = secret
                    page.notice = "Client \(id) created."
                    return try await render(page, session: session, started: .now)
                } catch let refused as ServiceRefusal {
                    var page = newClientPage(realm, form: ConsoleClientForm.values(settings, id: id, nativeGrants: nativeGrants))
                    page.error = refused.message
                    page.status = .badRequest
                    return try await render(page, session: session, started: .now)
                }
            }
        }
        router.get("console/realms/:realm/clients/:client") { request, context in
            await page(request, context) { _ in try await clientPage(realm: context.parameters.get("realm") ?? "", id: context.parameters.get("client") ?? "") }
        }
        router.post("console/realms/:realm/clients/:client") { request, context in
            await action(request, context) { session, form in
                let (realm, id) = (context.parameters.get("realm") ?? "", context.parameters.get("client") ?? "")
                let nativeGrants = try await nativeGrantsOn(realm)
                let (_, warning) = try await admin.clients.update(realm: realm, id: id, metadata: metadata(session, context)) {
                    try ConsoleClientForm.apply(form, to: &$0, nativeGrants: nativeGrants)
                }
                var page = try await clientPage(realm: realm, id: id)
                page.notice = "Saved."
                if let warning { page.values["warning"] = warning }
                return try await render(page, session: session, started: .now)
            }
        }
        registerClientActions(on: router)
    }

    /// Rotating a secret, enabling and disabling, and a client's history.
    private func registerClientActions(on router: Router<ModgudRequestContext>) {
        router.post("console/realms/:realm/clients/:client/rotate-secret") { request, context in
            await action(request, context) { session, _ in
                let (realm, id) = (context.parameters.get("realm") ?? "", context.parameters.get("client") ?? "")
                guard try await admin.clients.get(realm: realm, id: id).settings?.type == .confidential else {
                    throw ConsoleRefusal.badForm("Only a confidential client has a secret.")
                }
                let secret = try await admin.clients.rotateSecret(realm: realm, id: id, metadata: metadata(session, context))
                var page = try await clientPage(realm: realm, id: id)
                page.values["secret"] = secret
                return try await render(page, session: session, started: .now)
            }
        }
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            router.post("console/realms/:realm/clients/:client/\(verb)") { request, context in
                await action(request, context) { session, _ in
                    let (realm, id) = (context.parameters.get("realm") ?? "", context.parameters.get("client") ?? "")
                    _ = try await admin.clients.setEnabled(realm: realm, id: id, enabled: enabled, metadata: metadata(session, context))
                    return ConsoleResponse.redirect("/console/realms/\(realm)/clients/\(id)")
                }
            }
        }
        router.get("console/realms/:realm/clients/:client/delete") { request, context in
            await page(request, context) { _ in
                try await deleteClientPage(realm: context.parameters.get("realm") ?? "", id: context.parameters.get("client") ?? "")
            }
        }
        router.post("console/realms/:realm/clients/:client/delete") { request, context in
            await action(request, context) { session, form in
                let (realm, id) = (context.parameters.get("realm") ?? "", context.parameters.get("client") ?? "")
                guard form["confirm"]?.trimmingCharacters(in: .whitespaces) == id else {
                    var page = try await deleteClientPage(realm: realm, id: id)
                    page.error = "Type the client id to confirm; nothing was done."
                    page.status = .badRequest
                    return try await render(page, session: session, started: .now)
                }
                try await admin.clients.delete(realm: realm, id: id, metadata: metadata(session, context))
                return ConsoleResponse.redirect("/console/realms/\(realm)/clients")
            }
        }
        router.get("console/realms/:realm/clients/:client/audit") { request, context in
            await page(request, context) { _ in
                let (realm, id) = (context.parameters.get("realm") ?? "", context.parameters.get("client") ?? "")
                guard try await admin.clients.get(realm: realm, id: id).exists else { throw ConsoleRefusal.notFound("client") }
                return try await auditPage(
                    realm: realm, streams: [StreamNames.client(realm: realm, clientID: id).id], title: "History of client \(id)",
                    crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)"), ("Clients", "/console/realms/\(realm)/clients"),
                             (id, "/console/realms/\(realm)/clients/\(id)")])
            }
        }
    }

    /// The confirmation of a deletion, naming the client from its own record (issue 43).
    private func deleteClientPage(realm: String, id: String) async throws -> ConsolePage {
        let state = try await admin.clients.get(realm: realm, id: id)
        guard state.exists, let settings = state.settings else { throw ConsoleRefusal.notFound("client") }
        return ConsolePage(
            template: "client-delete", title: "Delete a client", values: ["realm": realm, "id": id, "displayName": settings.displayName],
            section: "realms",
            crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)"), ("Clients", "/console/realms/\(realm)/clients"),
                     (id, "/console/realms/\(realm)/clients/\(id)")])
    }

    /// Whether the realm's native grants are on: the grant picker offers them only then (issue 65, item 7).
    private func nativeGrantsOn(_ realm: String) async throws -> Bool {
        guard let settings = try await admin.realms.get(realm).settings else { throw ConsoleRefusal.notFound("realm") }
        return settings.nativeGrants.enabled
    }

    private func newClientPage(_ realm: String, form: [String: Any]) -> ConsolePage {
        ConsolePage(
            template: "client-new", title: "New client in \(realm)", values: ["realm": realm, "form": form], section: "realms",
            crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)"), ("Clients", "/console/realms/\(realm)/clients")])
    }

    private func clientPage(realm: String, id: String) async throws -> ConsolePage {
        let state = try await admin.clients.get(realm: realm, id: id)
        guard let settings = state.settings, let realmSettings = try await admin.realms.get(realm).settings else { throw ConsoleRefusal.notFound("client") }
        // The files as the realm's host serves them (every client's apps for the host).
        let host = PasskeyService.rpID(client: settings, realm: realmSettings) ?? realmSettings.hosts.first ?? ""
        let apps = try await admin.realms.appAssociations(realm: RealmDirectory.Entry(realmID: realm, settings: realmSettings), host: host)
        var values: [String: Any] = [
            "realm": realm, "id": id, "type": settings.type.rawValue, "confidential": settings.type == .confidential, "enabled": state.enabled,
            "form": ConsoleClientForm.values(settings, id: id, nativeGrants: realmSettings.nativeGrants.enabled), "associationHost": host,
            "attestation": settings.clientAttestation.rawValue, "attestedKeys": try await admin.clients.attestedKeys(realm: realm)[id] ?? 0,
        ]
        let counts = try await admin.clients.attestationCounts(realm: realm)[id] ?? .init()
        values["attestationCounts"] = ["attested": counts.attested, "unattested": counts.unattested, "refused": counts.refused]
        values["playIntegrity"] = settings.androidApps.map { app in
            ["package": app.packageName, "keysSet": state.playIntegrity[app.packageName] != nil] as [String: Any]
        }
        // Exactly the bytes the host serves (AppAssociations prints them indented already).
        if apps.hasApple { values["aasa"] = String(decoding: AppAssociations.appleAppSiteAssociation(apps), as: UTF8.self) }
        if apps.hasAndroid { values["assetlinks"] = String(decoding: AppAssociations.assetLinks(apps), as: UTF8.self) }
        return ConsolePage(
            template: "client", title: "Client \(id)", values: values, section: "realms",
            crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)"), ("Clients", "/console/realms/\(realm)/clients")])
    }
}
