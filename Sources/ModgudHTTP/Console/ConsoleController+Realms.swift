import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Realms: the list, one realm's settings, its effective rate limits and signing keys (issue 31).
extension ConsoleController {
    func registerRealms(on router: Router<ModgudRequestContext>) {
        router.get("console/realms") { request, context in
            await page(request, context) { _ in
                let realms = try await admin.realms.list().map { ["id": $0.id, "hosts": $0.hosts.joined(separator: ", "), "native": $0.nativeGrants] as [String: Any] }
                return ConsolePage(template: "realms", title: "Realms", values: ["realms": realms], section: "realms")
            }
        }
        router.get("console/realms/:realm") { request, context in
            await page(request, context) { _ in try await realmPage(context.parameters.get("realm") ?? "") }
        }
        router.get("console/realms/:realm/audit") { request, context in
            await page(request, context) { _ in
                let realm = context.parameters.get("realm") ?? ""
                guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
                return try await auditPage(
                    realm: realm, streams: [StreamNames.realm(realm).id], title: "History of realm \(realm)",
                    crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)")])
            }
        }
        registerRealmSettings(on: router)
        router.post("console/realms/:realm/rotate-key") { request, context in
            await action(request, context) { session, form in
                let realm = context.parameters.get("realm") ?? ""
                guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
                guard let algorithm = SigningKeyMaterial.Algorithm(rawValue: form["algorithm"] ?? "ES256") else {
                    throw ConsoleRefusal.badForm("Choose ES256 or RS256.")
                }
                _ = try await admin.realms.rotateSigningKey(realm: realm, algorithm: algorithm, metadata: metadata(session, context))
                return ConsoleResponse.redirect("/console/realms/\(realm)")
            }
        }
        router.post("console/realms/:realm/retire-key") { request, context in
            await action(request, context) { session, form in
                let realm = context.parameters.get("realm") ?? ""
                guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
                do {
                    _ = try await admin.realms.retireSigningKey(realm: realm, kid: form["kid"] ?? "", force: form["force"] == "on", metadata: metadata(session, context))
                } catch let refused as ServiceRefusal {
                    var page = try await realmPage(realm)
                    page.error = refused.message
                    return try await render(page, session: session, started: .now)
                }
                return ConsoleResponse.redirect("/console/realms/\(realm)")
            }
        }
    }

    /// The realm's page; after a refused save, the form shows what was typed and the reason
    /// beside its field (issue 43), with status 400.
    /// The realm form's save: a refused value re-renders the form with what was typed.
    private func registerRealmSettings(on router: Router<ModgudRequestContext>) {
        router.post("console/realms/:realm/settings") { request, context in
            await action(request, context) { session, form in
                let realm = context.parameters.get("realm") ?? ""
                let warning: String?
                do {
                    warning = try await admin.realms.update(realm, metadata: metadata(session, context)) { settings in
                        try Self.applyRealmForm(form, to: &settings)
                    }.warning
                } catch let refused as ConsoleRefusal where refused.field != nil {
                    return try await render(realmPage(realm, typed: form, refused: (refused.field, refused.message)), session: session, started: .now)
                } catch let refused as ServiceRefusal where refused.kind == .invalid {
                    return try await render(realmPage(realm, typed: form, refused: (nil, refused.message)), session: session, started: .now)
                }
                guard let warning else { return ConsoleResponse.redirect("/console/realms/\(realm)") }
                var page = try await realmPage(realm)
                page.error = warning
                page.notice = "Saved."
                return try await render(page, session: session, started: .now)
            }
        }
    }

    /// The realm's identity providers (issue 48), as the console lists them.
    static func providerRows(_ settings: RealmSettings) -> [[String: String]] {
        (settings.federatedProviders ?? []).map { provider in
            [
                "id": provider.id, "kind": provider.kind.rawValue, "audiences": provider.audiences.joined(separator: ", "),
                "linking": provider.linking.rawValue, "nonce": provider.requireNonce ? "required" : "optional",
                "appleKey": provider.appleTokenEndpoint.map { "\($0.keyID) of team \($0.teamID)" } ?? (provider.kind == .apple ? "not set" : "-"),
            ]
        }
    }

    func realmPage(_ id: String, typed: FormBody? = nil, refused: (field: String?, message: String)? = nil) async throws -> ConsolePage {
        let state = try await admin.realms.get(id)
        guard let settings = state.settings else { throw ConsoleRefusal.notFound("realm") }
        let facts: [[String: String]] = [
            ["label": "Display name", "value": settings.displayName],
            ["label": "Hosts", "value": settings.hosts.joined(separator: ", ")],
            ["label": "Primary domain (RP-ID)", "value": settings.primaryDomain ?? "-"],
            ["label": "Public base URL", "value": settings.publicBaseURL ?? "-"],
            ["label": "Issuer trailing slash", "value": settings.issuerTrailingSlash ? "yes" : "no"],
            ["label": "Web fallback for links", "value": settings.webFallbackURL ?? "-"],
            ["label": "Connections", "value": settings.connections.isEmpty ? "-" : settings.connections.joined(separator: ", ")],
            ["label": "Passkey step-up", "value": settings.accountGuards.passkeyStepUp ? "on, \(settings.sessionLimits.enrollmentFreshnessMinutes) min" : "off"],
            ["label": "Account audience check", "value": settings.accountGuards.accountAudience ? "on" : "off"],
        ]
        let fields = [("username", settings.registrationFields.username), ("firstname", settings.registrationFields.firstname),
                      ("lastname", settings.registrationFields.lastname)].map { field -> [String: Any] in
            [
                "name": field.0, "requirement": field.1.rawValue,
                "options": FieldRequirement.allCases.map { ["value": $0.rawValue, "selected": $0 == field.1] as [String: Any] },
            ]
        }
        let limits = Self.limitRows(settings)
        let keys = Self.keyRows(state, realm: id)
        let postures = RegistrationPosture.allCases.map { ["value": $0.rawValue, "label": $0.rawValue, "selected": $0 == settings.registrationPosture] as [String: Any] }
        let numbers = Self.realmNumbers.map { field -> [String: Any] in
            var row: [String: Any] = [
                "name": field.name, "label": field.label, "min": field.range.lowerBound, "max": field.range.upperBound,
                "value": typed?[field.name] ?? String(settings[keyPath: field.setting]),
            ]
            if let refused, refused.field == field.name { row["error"] = refused.message }
            return row
        }
        let values: [String: Any] = [
            "realm": id, "facts": facts, "fields": fields, "limits": limits, "keys": keys, "postures": postures,
            "providers": Self.providerRows(settings),
            "magicLinks": typed.map { $0["magic_links"] == "on" } ?? settings.magicLinksOn,
            "nativeGrants": typed.map { $0["native_grants"] == "on" } ?? settings.nativeGrants.enabled, "numbers": numbers,
            "passkeyStepUp": typed.map { $0["passkey_step_up"] == "on" } ?? settings.accountGuards.passkeyStepUp,
            "accountAudience": typed.map { $0["account_audience"] == "on" } ?? settings.accountGuards.accountAudience,
            "identity": [
                "displayName": settings.displayName, "hosts": settings.hosts.joined(separator: "\n"), "primaryDomain": settings.primaryDomain ?? "",
                "publicBaseURL": settings.publicBaseURL ?? "", "webFallbackURL": settings.webFallbackURL ?? "",
            ],
        ]
        var page = ConsolePage(template: "realm", title: "Realm \(id)", values: values, section: "realms", crumbs: [("Realms", "/console/realms")])
        if let refused {
            page.status = .badRequest
            page.error = refused.field == nil ? refused.message : "Nothing was saved: see the field marked below."
        }
        return page
    }

    /// Every rate-limit policy with its effective value, its default and whether the realm overrides it.
    static func limitRows(_ settings: RealmSettings) -> [[String: Any]] {
        RateLimitPolicy.all.map { policy -> [String: Any] in
            let setting = policy.setting(in: settings)
            let fallback = policy.defaultSetting
            return [
                "name": policy.name, "limit": ConsoleFormat.count(setting.limit), "window": ConsoleFormat.seconds(setting.windowSeconds),
                "burst": ConsoleFormat.count(setting.burst), "mode": setting.logOnly == true ? "log only" : "enforced",
                "source": settings.rateLimitOverrides[policy.name] == nil ? "default" : "realm override",
                "overridden": settings.rateLimitOverrides[policy.name] != nil, "allowlist": (setting.allowlist ?? []).joined(separator: ", "),
                "default": "\(ConsoleFormat.count(fallback.limit)) per \(ConsoleFormat.seconds(fallback.windowSeconds)), burst \(ConsoleFormat.count(fallback.burst))",
            ]
        }
    }

    /// The signing keys, newest first: which signs, which are published and from when each may be retired.
    static func keyRows(_ state: Realm.State, realm: String) -> [[String: Any]] {
        let active = state.activeKey?.kid
        return state.signingKeys.reversed().map { key -> [String: Any] in
            let retired = state.retiredKids.contains(key.kid)
            let retirable = state.rotatedOutAt(key.kid).map { ConsoleFormat.time($0.addingTimeInterval(Realm.retirementOverlap)) } ?? "-"
            return [
                "kid": key.kid, "algorithm": key.algorithm, "rotatedAt": ConsoleFormat.time(key.rotatedAt), "active": key.kid == active,
                "retired": retired, "published": key.kid != active && !retired, "retirableAt": retirable, "realm": realm,
            ]
        }
    }

    /// The realm form's number fields, bounded by the realm's own validation (the domain's ranges).
    static var realmNumbers: [(name: String, label: String, range: ClosedRange<Int>, setting: WritableKeyPath<RealmSettings, Int>)] {
        [
            ("access_minutes", "Access token lifetime (minutes)", NativeGrantSettings.accessTokenLifetimeRange, \.nativeGrants.accessTokenLifetimeMinutes),
            ("refresh_days", "Refresh token lifetime (days)", NativeGrantSettings.refreshTokenLifetimeRange, \.nativeGrants.refreshTokenLifetimeDays),
            ("absolute_days", "Session absolute lifetime (days)", SessionLimits.absoluteLifetimeRange, \.sessionLimits.absoluteLifetimeDays),
            ("reuse_grace", "Refresh reuse grace (seconds)", SessionLimits.reuseGraceRange, \.sessionLimits.refreshReuseGraceSeconds),
            ("enrollment_minutes", "Step-up freshness (minutes)", SessionLimits.enrollmentFreshnessRange, \.sessionLimits.enrollmentFreshnessMinutes),
        ]
    }

    /// The realm form's fields onto the settings; the realm's own validation runs on save.
    static func applyRealmForm(_ form: FormBody, to settings: inout RealmSettings) throws {
        guard let posture = RegistrationPosture(rawValue: form["registration_posture"] ?? "") else { throw ConsoleRefusal.badForm("Choose a registration posture.") }
        // The form shows the effective posture: sent back unchanged, it is no new choice.
        if settings.chosenRegistrationPosture != nil || posture != settings.registrationPosture { settings.registrationPosture = posture }
        settings.magicLinkEnabled = form["magic_links"] == "on"
        settings.nativeGrants.enabled = form["native_grants"] == "on"
        // Issue 65: the guards beyond the guide, off unless ticked.
        settings.accountGuards.passkeyStepUp = form["passkey_step_up"] == "on"
        settings.accountGuards.accountAudience = form["account_audience"] == "on"
        for field in realmNumbers {
            // A field the form did not send keeps its value (an older page).
            guard let text = form[field.name] else { continue }
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), field.range.contains(value) else {
                throw ConsoleRefusal(
                    status: .badRequest, message: "\(field.label) must be a whole number from \(field.range.lowerBound) to \(field.range.upperBound).",
                    field: field.name)
            }
            settings[keyPath: field.setting] = value
        }
    }
}
