import Foundation
import ModgudDomain
import PQ

/// The two files that let apps use a domain's passkeys (issue 15), built from clients' app
/// settings. Pure functions, plus one read of a realm's clients.
///
/// - `apple-app-site-association`: Apple's associated-domains file. Passkeys need the
///   `webcredentials` service: `{"webcredentials":{"apps":["TEAMID.bundle.id"]}}`. Served as
///   `application/json` over https at `/.well-known/apple-app-site-association`, no redirect.
/// - `assetlinks.json`: Google's Digital Asset Links statement list. Credential Manager needs
///   `delegate_permission/common.get_login_creds`; `handle_all_urls` lets the app open the
///   domain's links too. Served as `application/json` at `/.well-known/assetlinks.json`.
public enum AppAssociations {
    /// The apple-app-site-association document.
    public static func appleAppSiteAssociation(appIDs: some Sequence<String>) -> [UInt8] {
        render(["webcredentials": ["apps": Array(Set(appIDs)).sorted()]])
    }

    /// The assetlinks.json document: one statement per app.
    public static func assetLinks(apps: some Sequence<AndroidApp>) -> [UInt8] {
        // One statement per package, its fingerprints merged (two clients may name one app).
        var byPackage: [String: Set<String>] = [:]
        for app in apps { byPackage[app.packageName, default: []].formUnion(app.sha256Fingerprints) }
        let statements: [[String: Any]] = byPackage.keys.sorted().map { package in
            [
                "relation": ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"],
                "target": ["namespace": "android_app", "package_name": package, "sha256_cert_fingerprints": byPackage[package]!.sorted()],
            ]
        }
        return render(statements)
    }

    /// The apps of a realm's enabled clients whose passkeys live under `rpID` (their own RP-ID,
    /// or the realm's primary domain when they have none).
    public static func apps(realm: RealmDirectory.Entry, rpID: String, pool: PQPool) async throws -> (apple: [String], android: [AndroidApp]) {
        let host = rpID.lowercased()
        var apple: Set<String> = []
        var android: [AndroidApp] = []
        for settings in try await ClientsTable.enabledSettings(realm: realm.realmID, pool: pool) {
            guard PasskeyService.rpID(client: settings, realm: realm.settings)?.lowercased() == host
            else { continue }
            apple.formUnion(settings.appleAppIDs)
            android += settings.androidApps
        }
        return (apple.sorted(), android)
    }

    private static func render(_ value: Any) -> [UInt8] {
        let data = try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        return Array(data) + [UInt8(ascii: "\n")]
    }
}
