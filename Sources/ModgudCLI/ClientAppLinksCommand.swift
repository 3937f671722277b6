import ArgumentParser
import Foundation
import ModgudDomain
import ModgudService

extension ClientCommand {
    /// `modgud client app-links REALM ID` (issues 15 and 25): for each host the client's apps
    /// use, its RP-ID (passkeys) and, with `urn:cocoar:magic`, the magic-link host, what that
    /// host serves: the apple-app-site-association and assetlinks.json files, with the apps of
    /// every client of the realm on that host.
    struct AppLinks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-links",
            abstract: "Print the apple-app-site-association and assetlinks.json files of each host a client's apps use.",
            discussion: """
                Each host serves them at https://<host>/.well-known/apple-app-site-association and
                https://<host>/.well-known/assetlinks.json, as application/json, without redirects.
                Modgud serves both itself on the realm's hosts; an RP-ID elsewhere must host them.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String
        @Option(help: "Print only one file: aasa or assetlinks.") var only: String?

        func validate() throws {
            if let only, !["aasa", "assetlinks"].contains(only) { throw ValidationError("--only is aasa or assetlinks") }
        }

        func run() async throws {
            let served = try await AdminContext.run(database) { context in
                let client = try await context.admin.clients.get(realm: realm, id: id)
                guard let settings = client.settings else { throw CommandError("no client \(id) in realm \(realm)") }
                guard let realmSettings = try await context.services.realms.settings(realm: realm) else {
                    throw CommandError("no such realm \(realm)")
                }
                let entry = RealmDirectory.Entry(realmID: realm, settings: realmSettings)
                var hosts: [String] = []
                if let rpID = PasskeyService.rpID(client: settings, realm: realmSettings) { hosts.append(rpID.lowercased()) }
                if settings.grants.contains(.magic) {
                    hosts += AppAssociations.linkHost(realmSettings).map { [$0] } ?? realmSettings.hosts
                }
                var served: [(host: String, apps: AppAssociations.HostApps)] = []
                // Each host once, in order (NSOrderedSet does not remove repeated Swift strings on Linux).
                var seen = Set<String>()
                for host in hosts where seen.insert(host).inserted {
                    served.append((host, try await AppAssociations.apps(realm: entry, host: host, pool: context.pool)))
                }
                return served
            }
            let withApps = served.filter { $0.apps.hasApple || $0.apps.hasAndroid }
            if withApps.isEmpty {
                throw CommandError("no client of realm \(realm) on the hosts of \(id) has apps: set --apple-app-id or --android-app")
            }
            if let only {
                // One file for `> file`: every host must serve the same one, else say which differ.
                let documents = withApps.map { host, apps in
                    (host, String(decoding: only == "aasa" ? AppAssociations.appleAppSiteAssociation(apps) : AppAssociations.assetLinks(apps), as: UTF8.self))
                }
                guard Set(documents.map(\.1)).count == 1, let document = documents.first?.1 else {
                    throw CommandError("the hosts \(documents.map(\.0).joined(separator: ", ")) serve different \(only) files: run without --only to see each")
                }
                Swift.print(document, terminator: "")
                return
            }
            for (host, apps) in withApps {
                let aasa = String(decoding: AppAssociations.appleAppSiteAssociation(apps), as: UTF8.self)
                let links = String(decoding: AppAssociations.assetLinks(apps), as: UTF8.self)
                Swift.print("# https://\(host)/.well-known/apple-app-site-association")
                Swift.print(aasa)
                Swift.print("# https://\(host)/.well-known/assetlinks.json")
                Swift.print(links)
            }
        }
    }
}
