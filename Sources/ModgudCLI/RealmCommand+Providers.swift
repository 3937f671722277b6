import ArgumentParser
import Foundation
import ModgudService

extension RealmCommand {
    /// `modgud realm provider REALM ID --kind apple --audience com.example.app`: adds or replaces
    /// one of the realm's identity providers (issue 48), or removes it with `--remove`. Apple's and
    /// Google's issuer and JWKS URL are filled in; an `oidc` provider names both.
    struct Provider: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "provider",
            abstract: "Add, replace or remove an identity provider (Sign in with Apple, Google, OpenID) whose ID tokens the realm exchanges.",
            discussion: """
                Linking decides what a first sign-in whose address already has an account gets: EmailCode (the default) \
                asks for an email code to that address, VerifiedEmail links when the provider verified the address, \
                Never refuses. An apple provider keeps its Sign in with Apple key (realm apple-key) when replaced.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "The provider's id in this realm (apple, google, or your own).") var id: String
        @Option(help: "apple, google or oidc.") var kind: String?
        @Option(name: .customLong("audience"), help: "An aud its tokens may carry: a bundle id, a Services id, a client id (repeatable).")
        var audiences: [String] = []
        @Option(help: "The issuer (oidc; Apple's and Google's by default).") var issuer: String?
        @Option(help: "The JWKS URL (oidc; Apple's and Google's by default).") var jwksURL: String?
        @Option(help: "EmailCode, VerifiedEmail or Never.") var linking: String?
        @Flag(help: "Accept exchanges without a nonce from this server (for an SDK that cannot pass one).") var noNonce = false
        @Flag(help: "Remove the provider: its tokens are refused from then on.") var remove = false

        func validate() throws {
            guard remove || (kind != nil && !audiences.isEmpty) else { throw ValidationError("Give --kind and at least one --audience, or --remove.") }
        }

        func run() async throws {
            try RealmCommand.print(
                try await AdminContext.run(database) { context in
                    let realms = context.admin.realms
                    if remove { return try await realms.removeProvider(realm: realm, id: id, metadata: context.metadata) }
                    let provider = try await realms.provider(
                        id: id, kind: kind ?? "", issuer: issuer, jwksURL: jwksURL, audiences: audiences, linking: linking, requireNonce: !noNonce)
                    return try await realms.setProvider(realm: realm, provider, metadata: context.metadata)
                })
        }
    }

    /// `modgud realm apple-key REALM PROVIDER --team-id T --key-id K --client-id C --key-file F`:
    /// the Sign in with Apple key an apple provider redeems authorization codes with (Auth0's
    /// `apple-authz-code` form). The key is read from a file or standard input, never argv, and
    /// sealed with the master key.
    struct AppleKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apple-key", abstract: "Set (or remove) the Sign in with Apple key an apple provider redeems authorization codes with.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "The apple provider's id.") var provider: String
        @Option(help: "The Apple Developer team id.") var teamID: String?
        @Option(help: "The key's id (Certificates, Identifiers & Profiles > Keys).") var keyID: String?
        @Option(help: "Apple's client_id for the app: its bundle id (one of the provider's audiences).") var clientID: String?
        @Option(help: "The .p8 file ('-' reads standard input).") var keyFile: String?
        @Option(help: "Apple's token endpoint (only tests change it).") var tokenURL: String?
        @Flag(help: "Remove the key: authorization codes are refused from then on.") var remove = false

        func validate() throws {
            guard remove || (teamID != nil && keyID != nil && clientID != nil && keyFile != nil) else {
                throw ValidationError("Give --team-id, --key-id, --client-id and --key-file, or --remove.")
            }
        }

        func run() async throws {
            if remove {
                try RealmCommand.print(
                    try await AdminContext.run(database) { try await $0.admin.realms.removeAppleKey(realm: realm, provider: provider, metadata: $0.metadata) })
                return
            }
            let key = RealmAdministration.AppleKey(
                teamID: teamID ?? "", keyID: keyID ?? "", clientID: clientID ?? "", privateKeyPEM: try ClientCommand.PlayIntegrity.read(keyFile ?? "-"),
                tokenURL: tokenURL)
            try RealmCommand.print(
                try await AdminContext.run(database) { try await $0.admin.realms.setAppleKey(realm: realm, provider: provider, key: key, metadata: $0.metadata) })
        }
    }
}
