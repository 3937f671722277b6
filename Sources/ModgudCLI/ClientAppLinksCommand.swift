import ArgumentParser
import Foundation
import ModgudDomain
import ModgudService

extension ClientCommand {
    /// `modgud client app-links REALM ID` (issue 15): the apple-app-site-association and
    /// assetlinks.json files for the client's RP-ID, with the apps of every client of the realm
    /// that shares it, for hosting on the RP-ID's own site.
    struct AppLinks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-links",
            abstract: "Print the apple-app-site-association and assetlinks.json files for a client's RP-ID.",
            discussion: """
                Host them at https://<rp-id>/.well-known/apple-app-site-association and
                https://<rp-id>/.well-known/assetlinks.json, as application/json, without redirects.
                When the RP-ID is a host of the realm, Modgud serves both itself.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String
        @Option(help: "Print only one file: aasa or assetlinks.") var only: String?

        func validate() throws {
            if let only, !["aasa", "assetlinks"].contains(only) { throw ValidationError("--only is aasa or assetlinks") }
        }

        func run() async throws {
            let (rpID, apps) = try await AdminContext.run(database) { context in
                let client = try await context.admin.client(realm: realm, id: id)
                guard let settings = client.settings else { throw CommandError("no client \(id) in realm \(realm)") }
                guard let realmSettings = try await context.admin.core.realmDirectory.settings(realm: realm) else {
                    throw CommandError("no such realm \(realm)")
                }
                guard let rpID = PasskeyService.rpID(client: settings, realm: realmSettings) else {
                    throw CommandError("the client has no RP-ID and the realm no primary domain")
                }
                let entry = RealmDirectory.Entry(realmID: realm, settings: realmSettings)
                return (rpID, try await AppAssociations.apps(realm: entry, rpID: rpID, pool: context.pool))
            }
            if apps.apple.isEmpty && apps.android.isEmpty {
                throw CommandError("no client of realm \(realm) under RP-ID \(rpID) has apps: set --apple-app-id or --android-app")
            }
            let aasa = String(decoding: AppAssociations.appleAppSiteAssociation(appIDs: apps.apple), as: UTF8.self)
            let links = String(decoding: AppAssociations.assetLinks(apps: apps.android), as: UTF8.self)
            switch only {
            case "aasa": Swift.print(aasa, terminator: "")
            case "assetlinks": Swift.print(links, terminator: "")
            default:
                Swift.print("# https://\(rpID)/.well-known/apple-app-site-association")
                Swift.print(aasa)
                Swift.print("# https://\(rpID)/.well-known/assetlinks.json")
                Swift.print(links, terminator: "")
            }
        }
    }
}
