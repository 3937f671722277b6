import ModgudDomain

/// The client form of the console (issue 31): settings to form values and back. The client's
/// own validation (the domain's) runs on save and its message is shown.
enum ConsoleClientForm {
    static let grantLabels: [GrantType: String] = [
        .otp: "Email code", .magic: "Magic link", .passkey: "Passkey", .refreshToken: "Refresh token", .clientCredentials: "Client credentials",
        .recoveryCode: "Recovery code", .tokenExchange: "Sign in with Apple or Google (token exchange)",
    ]

    /// The grants the picker offers: the native ones only while the realm's flag is on (issue
    /// 65, item 7; docs/guides/ios-and-android.md: "They only appear in the grant picker once
    /// the realm flag in step 1 is on.").
    static func offered(nativeGrants: Bool) -> [GrantType] {
        GrantType.allCases.sorted().filter { nativeGrants || !GrantType.native.contains($0) }
    }

    /// What the form shows for `settings` (nil: a new client's defaults). With the realm's
    /// native grants off, the picker leaves them out and says how to turn them on; a client
    /// that holds them is told they are inert.
    static func values(_ settings: ClientSettings?, id: String = "", nativeGrants: Bool) -> [String: Any] {
        let grants = settings?.grants ?? (nativeGrants ? [.otp, .magic, .passkey, .refreshToken] : [])
        let inert = nativeGrants ? [] : grants.intersection(GrantType.native).sorted().map(\.rawValue)
        return [
            "id": id, "public": settings.map { $0.type == .public } ?? true, "displayName": settings?.displayName ?? "",
            "grants": offered(nativeGrants: nativeGrants).map {
                ["value": $0.rawValue, "label": grantLabels[$0] ?? $0.rawValue, "checked": grants.contains($0)] as [String: Any]
            },
            "nativeGrantsOff": !nativeGrants, "inertGrants": inert.joined(separator: ", "), "hasInertGrants": !inert.isEmpty,
            "scopes": (settings?.allowedScopes ?? ["openid", "email", "profile", "offline_access"]).sorted().joined(separator: " "),
            "audiences": (settings?.audiences ?? []).sorted().joined(separator: " "),
            "defaultAudience": settings?.defaultAudience ?? "",
            "refreshPolicies": (settings?.refreshTokenPolicies ?? []).map { ([$0.audience] + $0.scopes).joined(separator: " ") }.joined(separator: "\n"),
            "rpID": settings?.rpID ?? "",
            "appleAppIDs": (settings?.appleAppIDs ?? []).sorted().joined(separator: "\n"),
            "appURLScheme": settings?.appURLScheme ?? "",
            "androidApps": (settings?.androidApps ?? []).map { ([$0.packageName] + $0.sha256Fingerprints).joined(separator: " ") }.joined(separator: "\n"),
            "formats": [AccessTokenFormat.reference, .jwt].map { ["value": $0.rawValue, "selected": (settings?.accessTokenFormat ?? .reference) == $0] as [String: Any] },
            "attestationModes": ClientAttestationMode.allCases.map {
                ["value": $0.rawValue, "selected": (settings?.clientAttestation ?? .off) == $0] as [String: Any]
            },
            "appAttestEnvironments": AppAttestEnvironments.allCases.map {
                ["value": $0.rawValue, "selected": (settings?.appAttestEnvironments ?? .production) == $0] as [String: Any]
            },
        ]
    }

    /// The posted fields onto `settings` (the type is set only at creation). With the realm's
    /// native grants off the picker did not offer them: native grants the client holds stay
    /// (inert), and none is taken from the form.
    static func apply(_ form: FormBody, to settings: inout ClientSettings, nativeGrants: Bool) throws {
        settings.displayName = String((form["display_name"] ?? "").prefix(200))
        let kept = nativeGrants ? [] : settings.grants.intersection(GrantType.native)
        settings.grants = kept.union(offered(nativeGrants: nativeGrants).filter { form["grant_\($0.rawValue)"] == "on" })
        settings.allowedScopes = words(form["scopes"])
        settings.audiences = words(form["audiences"])
        settings.defaultAudience = form["default_audience"]?.trimmingCharacters(in: .whitespaces).nilWhenEmpty
        settings.refreshTokenPolicies = try lines(form["refresh_policies"]).map { line in
            let parts = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard parts.count >= 2 else { throw ConsoleRefusal.badForm("A refresh policy is an audience, then one or more scopes.") }
            return RefreshTokenPolicy(audience: parts[0], scopes: Array(parts.dropFirst()))
        }
        settings.rpID = form["rp_id"]?.trimmingCharacters(in: .whitespaces).nilWhenEmpty
        settings.appleAppIDs = words(form["apple_app_ids"])
        settings.appURLScheme = form["app_url_scheme"]?.trimmingCharacters(in: .whitespaces).nilWhenEmpty
        settings.androidApps = try lines(form["android_apps"]).map { line in
            let parts = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard parts.count >= 2 else { throw ConsoleRefusal.badForm("An Android app is its package name, then one or more SHA-256 fingerprints.") }
            return AndroidApp(packageName: parts[0], sha256Fingerprints: Array(parts.dropFirst()))
        }
        guard let format = AccessTokenFormat(rawValue: form["access_token_format"] ?? "reference") else {
            throw ConsoleRefusal.badForm("Choose reference or jwt tokens.")
        }
        settings.accessTokenFormat = format
        guard let mode = ClientAttestationMode(rawValue: form["client_attestation"] ?? "off"),
            let environments = AppAttestEnvironments(rawValue: form["app_attest_environments"] ?? "production")
        else { throw ConsoleRefusal.badForm("Client attestation is off, allowed or required; App Attest keys come from production or production+development.") }
        settings.clientAttestation = mode
        settings.appAttestEnvironments = environments
    }

    static func words(_ text: String?) -> Set<String> {
        Set((text ?? "").split(whereSeparator: \.isWhitespace).map(String.init))
    }

    static func lines(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

extension String {
    fileprivate var nilWhenEmpty: String? { isEmpty ? nil : self }
}
