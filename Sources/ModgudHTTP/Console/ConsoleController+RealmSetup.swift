import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Creating a realm and editing what the realm page showed read-only (issue 43): hosts and
/// names, registration fields, rate limits. The realm's own validation decides; a refusal
/// re-renders the page with the reason, nothing saved.
extension ConsoleController {
    func registerRealmSetup(on router: Router<ModgudRequestContext>) {
        router.get("console/realms/new") { request, context in
            await page(request, context) { _ in newRealmPage(form: nil, error: nil) }
        }
        router.post("console/realms/new") { request, context in
            await action(request, context) { session, form in
                let id = (form["id"] ?? "").trimmingCharacters(in: .whitespaces)
                let settings = RealmSettings(
                    hosts: Self.list(form["hosts"]), displayName: (form["display_name"] ?? "").trimmingCharacters(in: .whitespaces),
                    nativeGrants: NativeGrantSettings(enabled: form["native_grants"] == "on"))
                let algorithm = SigningKeyMaterial.Algorithm(rawValue: form["algorithm"] ?? "ES256") ?? .es256
                do {
                    _ = try await admin.realms.create(id, settings: settings, signingAlgorithm: algorithm, metadata: metadata(session, context))
                } catch let refused as ServiceRefusal where refused.kind != .unavailable {
                    return try await render(newRealmPage(form: form, error: refused.message), session: session, started: .now)
                }
                return ConsoleResponse.redirect("/console/realms/\(id)")
            }
        }
        registerRealmEdits(on: router)
    }

    /// The realm page's edit forms: each applies one part of the settings to the latest ones.
    private func registerRealmEdits(on router: Router<ModgudRequestContext>) {
        let edits: [(String, @Sendable (FormBody, inout RealmSettings) throws -> Void)] = [
            ("identity", Self.applyIdentityForm), ("registration-fields", Self.applyFieldsForm), ("rate-limits", Self.applyRateLimitForm),
        ]
        for (path, apply) in edits {
            router.post("console/realms/:realm/\(path)") { request, context in
                await action(request, context) { session, form in
                    let realm = context.parameters.get("realm") ?? ""
                    do {
                        _ = try await admin.realms.update(realm, metadata: metadata(session, context)) { try apply(form, &$0) }
                    } catch let refused as ServiceRefusal where refused.kind == .invalid || refused.kind == .conflict {
                        return try await render(realmPage(realm, refused: (nil, refused.message)), session: session, started: .now)
                    } catch let refused as ConsoleRefusal {
                        return try await render(realmPage(realm, refused: (nil, refused.message)), session: session, started: .now)
                    }
                    return ConsoleResponse.redirect("/console/realms/\(realm)")
                }
            }
        }
    }

    private func newRealmPage(form: FormBody?, error: String?) -> ConsolePage {
        var page = ConsolePage(
            template: "realm-new", title: "New realm",
            values: [
                "id": form?["id"] ?? "", "displayName": form?["display_name"] ?? "", "hosts": form?["hosts"] ?? "",
                "nativeGrants": form.map { $0["native_grants"] == "on" } ?? true, "rs256": form?["algorithm"] == "RS256",
            ], section: "realms", crumbs: [("Realms", "/console/realms")])
        if let error {
            page.error = error
            page.status = .badRequest
        }
        return page
    }

    /// Hosts (one per line or separated by commas or spaces) and the realm's names and URLs.
    static func applyIdentityForm(_ form: FormBody, to settings: inout RealmSettings) throws {
        settings.hosts = list(form["hosts"])
        settings.displayName = (form["display_name"] ?? settings.displayName).trimmingCharacters(in: .whitespaces)
        settings.primaryDomain = optional(form["primary_domain"])
        settings.publicBaseURL = optional(form["public_base_url"])
        settings.webFallbackURL = optional(form["web_fallback_url"])
    }

    static func applyFieldsForm(_ form: FormBody, to settings: inout RealmSettings) throws {
        for field in ["Username", "Firstname", "Lastname"] {
            guard let requirement = FieldRequirement(rawValue: form[field.lowercased()] ?? "") else {
                throw ConsoleRefusal.badForm("Choose Off, Optional or Required for \(field).")
            }
            _ = settings.registrationFields.set(field, to: requirement)
        }
    }

    /// One policy's override, or (`reset`) back to its default.
    static func applyRateLimitForm(_ form: FormBody, to settings: inout RealmSettings) throws {
        guard let policy = RateLimitPolicy.all.first(where: { $0.name == form["policy"] }) else { throw ConsoleRefusal.badForm("No such policy.") }
        if form["reset"] == "on" {
            settings.rateLimitOverrides[policy.name] = nil
            return
        }
        guard let limit = Int(form["limit"] ?? ""), let window = Int(form["window"] ?? ""), let burst = Int(form["burst"] ?? "") else {
            throw ConsoleRefusal.badForm("Limit, window (seconds) and burst of \(policy.name) are whole numbers.")
        }
        let allowlist = list(form["allowlist"])
        settings.rateLimitOverrides[policy.name] = RateLimitSetting(
            limit: limit, windowSeconds: window, burst: burst, logOnly: form["log_only"] == "on" ? true : nil, allowlist: allowlist.isEmpty ? nil : allowlist)
    }

    static func list(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
    }

    static func optional(_ text: String?) -> String? {
        guard let trimmed = text?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty else { return nil }
        return trimmed
    }
}
