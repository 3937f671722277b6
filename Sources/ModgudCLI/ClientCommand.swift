import ArgumentParser
import ModgudDomain
import ModgudService

struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "Register, change and inspect OAuth clients.",
        subcommands: [Create.self, Update.self, Show.self, List.self, Disable.self, Enable.self, RotateSecret.self, Delete.self, AppLinks.self, PlayIntegrity.self])

    struct SettingsOptions: ParsableArguments {
        @Option(name: .customLong("grant"), help: ArgumentHelp(Self.grantHelp))
        var grants: [String] = []

        /// Every grant type a client may hold, for `--grant`'s help.
        static let grantHelp = "A grant type (repeatable): " + GrantType.allCases.sorted().map(\.rawValue).joined(separator: ", ") + "."
        @Option(name: .customLong("scope"), help: "An allowed scope (repeatable).") var scopes: [String] = []
        @Option(name: .customLong("audience"), help: "An audience tokens may be narrowed to (repeatable).") var audiences: [String] = []
        @Option(help: "The audience of a token asked for without one (one of --audience; \"\" clears: the client itself).")
        var defaultAudience: String?
        @Option(
            name: .customLong("refresh-policy"),
            help: "AUDIENCE=SCOPE[,SCOPE…]: a refresh may switch to that audience with those scopes (Auth0's multi-resource refresh; repeatable; \"\" clears).")
        var refreshPolicies: [String] = []
        @Option(help: "WebAuthn RP-ID (empty: the realm's primary domain).") var rpID: String?
        @Option(name: .customLong("android-origin"), help: "android:apk-key-hash:… (repeatable).") var androidOrigins: [String] = []
        @Option(help: "Access-token format: reference or jwt.") var format: String?
        @Option(help: "DPoP at the token endpoint (RFC 9449): off, allowed or required.") var dpop: String?
        @Option(help: "Every DPoP proof must carry a server nonce (true or false).") var dpopNonce: Bool?
        @Option(help: "Attestation-based client authentication (genuine apps): off, allowed or required.") var clientAttestation: String?
        @Option(help: "App Attest environments accepted: production or production+development.") var appAttestEnvironments: String?
        @Option(help: "Display name.") var displayName: String?
        @Option(help: "Allow passkey sign-up (true or false; needs the passkey grant).") var passkeySignUp: Bool?
        @Option(name: .customLong("apple-app-id"), help: "An iOS app, TEAMID.bundle.id (repeatable; \"\" clears).") var appleAppIDs: [String] = []
        @Option(
            name: .customLong("android-app"),
            help: "An Android app, package=FINGERPRINT[,FINGERPRINT…] (SHA-256 signing-certificate fingerprints; repeatable; \"\" clears).")
        var androidApps: [String] = []
        @Option(help: "The iOS app's custom URL scheme the /magic-login page opens it with (\"\" clears).") var appURLScheme: String?

        func apply(to settings: inout ClientSettings) throws {
            if !grants.isEmpty {
                settings.grants = Set(try grants.map { name in
                    guard let grant = GrantType(rawValue: name) else { throw ValidationError("unknown grant \(name)") }
                    return grant
                })
            }
            if !scopes.isEmpty { settings.allowedScopes = Set(scopes) }
            if !audiences.isEmpty { settings.audiences = Set(audiences) }
            if let defaultAudience { settings.defaultAudience = defaultAudience.isEmpty ? nil : defaultAudience }
            if !refreshPolicies.isEmpty {
                settings.refreshTokenPolicies = try refreshPolicies.filter { !$0.isEmpty }.map { text in
                    guard let split = text.lastIndex(of: "="), split != text.startIndex else {
                        throw ValidationError("--refresh-policy is AUDIENCE=SCOPE[,SCOPE…]")
                    }
                    return RefreshTokenPolicy(
                        audience: String(text[..<split]), scopes: text[text.index(after: split)...].split(separator: ",").map(String.init))
                }
            }
            if let rpID { settings.rpID = rpID.isEmpty ? nil : rpID }
            if !androidOrigins.isEmpty { settings.androidOrigins = Set(androidOrigins) }
            if let format {
                guard let value = AccessTokenFormat(rawValue: format) else { throw ValidationError("--format is reference or jwt") }
                settings.accessTokenFormat = value
            }
            if let dpop {
                guard let value = DPoPPolicy(rawValue: dpop) else { throw ValidationError("--dpop is off, allowed or required") }
                settings.dpop = value
            }
            if let dpopNonce { settings.dpopNonce = dpopNonce }
            if let clientAttestation {
                guard let value = ClientAttestationMode(rawValue: clientAttestation) else {
                    throw ValidationError("--client-attestation is off, allowed or required")
                }
                settings.clientAttestation = value
            }
            if let appAttestEnvironments {
                guard let value = AppAttestEnvironments(rawValue: appAttestEnvironments) else {
                    throw ValidationError("--app-attest-environments is production or production+development")
                }
                settings.appAttestEnvironments = value
            }
            if let displayName { settings.displayName = displayName }
            if let passkeySignUp { settings.passkeySignUp = passkeySignUp }
            if !appleAppIDs.isEmpty { settings.appleAppIDs = Set(appleAppIDs.filter { !$0.isEmpty }) }
            if !androidApps.isEmpty {
                settings.androidApps = try androidApps.filter { !$0.isEmpty }.map { text in
                    let parts = text.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { throw ValidationError("--android-app is package=FINGERPRINT[,FINGERPRINT…]") }
                    return AndroidApp(packageName: String(parts[0]), sha256Fingerprints: parts[1].split(separator: ",").map(String.init))
                }
            }
            if let appURLScheme { settings.appURLScheme = appURLScheme.isEmpty ? nil : appURLScheme }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a client; a confidential client's secret is printed once.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String
        @Option(help: "public or confidential.") var type = "public"
        @OptionGroup var settings: SettingsOptions

        func run() async throws {
            guard let clientType = ClientType(rawValue: type) else { throw ValidationError("--type is public or confidential") }
            var clientSettings = ClientSettings(type: clientType, grants: [], allowedScopes: [])
            try settings.apply(to: &clientSettings)
            try await AdminContext.run(database) { context in
                let (state, secret) = try await context.admin.clients.create(realm: realm, id: id, settings: clientSettings, metadata: context.metadata)
                ClientCommand.print(state)
                if let secret { Swift.print("secret       \(secret)   (shown once; store it now)") }
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a client (warns when the RP-ID changes).")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String
        @OptionGroup var settings: SettingsOptions

        func run() async throws {
            try await AdminContext.run(database) { context in
                let (state, warning) = try await context.admin.clients.update(realm: realm, id: id, metadata: context.metadata) {
                    try settings.apply(to: &$0)
                }
                ClientCommand.print(state)
                if let warning { Swift.print("warning: \(warning)") }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a client.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String

        func run() async throws {
            let (state, counts) = try await AdminContext.run(database) {
                (try await $0.admin.clients.get(realm: realm, id: id), try await $0.admin.clients.attestationCounts(realm: realm)[id])
            }
            guard state.exists else { throw CommandError("no client \(id) in realm \(realm)") }
            ClientCommand.print(state)
            if let counts {
                Swift.print("attested     \(counts.attested) requests, \(counts.unattested) served unattested, \(counts.refused) refused")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a realm's clients.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String

        func run() async throws {
            for client in try await AdminContext.run(database, { try await $0.admin.clients.list(realm: realm) }) {
                Swift.print("\(client.id)\t\(client.type)\t\(client.enabled ? "enabled" : "disabled")")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a client: it cannot authenticate, its tokens stop working at once, its id is retired.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String

        func run() async throws {
            try await AdminContext.run(database) { try await $0.admin.clients.delete(realm: realm, id: id, metadata: $0.metadata) }
            Swift.print("deleted client \(id) of realm \(realm)")
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable a client (its grants then fail with invalid_grant).")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String

        func run() async throws {
            ClientCommand.print(
                try await AdminContext.run(database) { try await $0.admin.clients.setEnabled(realm: realm, id: id, enabled: false, metadata: $0.metadata) })
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a client.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String

        func run() async throws {
            ClientCommand.print(
                try await AdminContext.run(database) { try await $0.admin.clients.setEnabled(realm: realm, id: id, enabled: true, metadata: $0.metadata) })
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret", abstract: "Give a confidential client a new secret (printed once); the old one stops working.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String

        func run() async throws {
            let secret = try await AdminContext.run(database) { try await $0.admin.clients.rotateSecret(realm: realm, id: id, metadata: $0.metadata) }
            Swift.print("secret       \(secret)   (shown once; store it now)")
        }
    }

    static func print(_ state: Client.State) {
        guard let id = state.id, let settings = state.settings else { return }
        Swift.print("client       \(id) (\(settings.type.rawValue), \(state.enabled ? "enabled" : "disabled"))")
        Swift.print("grants       \(settings.grants.sorted().map(\.rawValue).joined(separator: " "))")
        Swift.print("scopes       \(settings.allowedScopes.sorted().joined(separator: " "))")
        Swift.print("audiences    \(settings.audiences.sorted().joined(separator: " "))")
        Swift.print("default aud. \(settings.defaultAudience ?? "(the client itself)")")
        for policy in settings.refreshTokenPolicies {
            Swift.print("refresh to   \(policy.audience) with \(policy.scopes.joined(separator: " "))")
        }
        Swift.print("rp-id        \(settings.rpID ?? "(realm primary domain)")")
        Swift.print("tokens       \(settings.accessTokenFormat.rawValue), DPoP \(settings.dpop.rawValue)\(settings.dpopNonce ? ", nonce always" : "")")
        Swift.print("attestation  \(settings.clientAttestation.rawValue) (App Attest \(settings.appAttestEnvironments.rawValue))")
        if settings.passkeySignUp { Swift.print("sign-up      passkey") }
        for app in settings.appleAppIDs.sorted() { Swift.print("ios app      \(app)") }
        if let scheme = settings.appURLScheme { Swift.print("url scheme   \(scheme)://magic-login") }
        for app in settings.androidApps {
            Swift.print("android app  \(app.packageName) \(app.sha256Fingerprints.joined(separator: ","))")
            if state.playIntegrity[app.packageName] != nil { Swift.print("             Play Integrity keys set") }
        }
    }
}
