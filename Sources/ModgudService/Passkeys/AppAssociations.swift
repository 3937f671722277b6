import Foundation
import ModgudDomain
import PQ

/// The two files that let apps use a domain (issues 15 and 25), built from clients' app
/// settings. Pure functions, plus one read of a realm's clients.
///
/// - `apple-app-site-association`: Apple's associated-domains file. Passkeys need the
///   `webcredentials` service (`{"apps": ["TEAMID.bundle.id"]}`); magic links need `applinks`
///   in Apple's current form, `details` of `appIDs` and `components`, here for `/magic-login`
///   only. Served as `application/json` over https, no redirect.
/// - `assetlinks.json`: Google's Digital Asset Links statement list. An app that accepts the
///   host's magic links gets `delegate_permission/common.handle_all_urls` (its intent filter
///   needs `autoVerify`); one whose passkeys live under the host gets
///   `delegate_permission/common.get_login_creds`.
public enum AppAssociations {
    /// The path of the magic links (docs/spec.md section 3): the only one `applinks` claims.
    public static let magicLinkPath = "/magic-login"

    /// What one host serves: the apps whose passkeys live under it (its RP-ID), and the apps
    /// that open its magic links (clients with `urn:cocoar:magic`, on the link host).
    public struct HostApps: Sendable, Equatable {
        public var passkeyApple: [String] = []
        public var linkApple: [String] = []
        public var passkeyAndroid: [AndroidApp] = []
        public var linkAndroid: [AndroidApp] = []
        /// The custom URL schemes of the iOS apps that open the host's magic links (issue 65,
        /// item 6: what `/magic-login`'s button opens on an iPhone). In no file.
        public var linkSchemes: [String] = []

        public init(
            passkeyApple: [String] = [], linkApple: [String] = [], passkeyAndroid: [AndroidApp] = [], linkAndroid: [AndroidApp] = [],
            linkSchemes: [String] = []
        ) {
            self.passkeyApple = passkeyApple
            self.linkApple = linkApple
            self.passkeyAndroid = passkeyAndroid
            self.linkAndroid = linkAndroid
            self.linkSchemes = linkSchemes
        }

        public var hasApple: Bool { !passkeyApple.isEmpty || !linkApple.isEmpty }
        public var hasAndroid: Bool { !passkeyAndroid.isEmpty || !linkAndroid.isEmpty }
    }

    /// The apple-app-site-association document of a host.
    public static func appleAppSiteAssociation(_ apps: HostApps) -> [UInt8] {
        var document: [String: Any] = [:]
        if !apps.linkApple.isEmpty {
            document["applinks"] = [
                "details": [
                    [
                        "appIDs": Array(Set(apps.linkApple)).sorted(),
                        "components": [["/": magicLinkPath, "comment": "Modgud magic links"]],
                    ]
                ]
            ]
        }
        if !apps.passkeyApple.isEmpty { document["webcredentials"] = ["apps": Array(Set(apps.passkeyApple)).sorted()] }
        return render(document)
    }

    /// The apple-app-site-association document for passkeys only.
    public static func appleAppSiteAssociation(appIDs: some Sequence<String>) -> [UInt8] {
        appleAppSiteAssociation(HostApps(passkeyApple: Array(appIDs)))
    }

    /// The assetlinks.json document of a host: one statement per package, its fingerprints
    /// merged (two clients may name one app), with the relations its roles need.
    public static func assetLinks(_ apps: HostApps) -> [UInt8] {
        var byPackage: [String: (fingerprints: Set<String>, relations: Set<String>)] = [:]
        for (list, relation) in [
            (apps.linkAndroid, "delegate_permission/common.handle_all_urls"), (apps.passkeyAndroid, "delegate_permission/common.get_login_creds"),
        ] {
            for app in list {
                byPackage[app.packageName, default: ([], [])].fingerprints.formUnion(app.sha256Fingerprints)
                byPackage[app.packageName, default: ([], [])].relations.insert(relation)
            }
        }
        let statements: [[String: Any]] = byPackage.keys.sorted().map { package in
            [
                "relation": byPackage[package]!.relations.sorted(),
                "target": ["namespace": "android_app", "package_name": package, "sha256_cert_fingerprints": byPackage[package]!.fingerprints.sorted()],
            ]
        }
        return render(statements)
    }

    /// The assetlinks.json document for passkeys only.
    public static func assetLinks(apps: some Sequence<AndroidApp>) -> [UInt8] {
        assetLinks(HostApps(passkeyAndroid: Array(apps)))
    }

    /// The host a realm's magic links point at: `PublicBaseURL`'s, else nil (the request's own
    /// host, any of the realm's).
    public static func linkHost(_ settings: RealmSettings) -> String? {
        settings.publicBaseURL.flatMap { URL(string: $0)?.host?.lowercased() }
    }

    /// What `host` serves for a realm: the enabled clients whose passkeys live under it (their
    /// own RP-ID, or the realm's primary domain when they have none), and, when it is the
    /// magic-link host, the enabled clients with `urn:cocoar:magic`.
    public static func apps(realm: RealmDirectory.Entry, host rawHost: String, pool: PQPool) async throws -> HostApps {
        let host = rawHost.lowercased()
        let servesLinks = linkHost(realm.settings).map { $0 == host } ?? realm.settings.hosts.contains(host)
        var apps = HostApps()
        for settings in try await ClientsTable.enabledSettings(realm: realm.realmID, pool: pool) {
            if PasskeyService.rpID(client: settings, realm: realm.settings)?.lowercased() == host {
                apps.passkeyApple += settings.appleAppIDs
                apps.passkeyAndroid += settings.androidApps
            }
            if servesLinks, settings.grants.contains(.magic) {
                apps.linkApple += settings.appleAppIDs
                apps.linkAndroid += settings.androidApps
                if let scheme = settings.appURLScheme { apps.linkSchemes.append(scheme) }
            }
        }
        return apps
    }

    private static func render(_ value: Any) -> [UInt8] {
        let data = try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        return Array(data) + [UInt8(ascii: "\n")]
    }
}
