import ArgumentParser
import Foundation
import ModgudDomain
import ModgudService

struct RealmCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "realm", abstract: "Create, change and inspect realms.", subcommands: [
            Create.self, Update.self, Show.self, List.self, RotateKey.self, RetireKey.self, Provider.self, AppleKey.self, Move.self, Retire.self,
        ])

    /// Settings options shared by create and update (unset options leave values alone on update).
    struct SettingsOptions: ParsableArguments {
        @Option(name: .customLong("host"), help: "A host of the realm (repeatable; update replaces the list).") var hosts: [String] = []
        @Option(help: "Display name.") var displayName: String?
        @Option(help: "Passkey RP-ID fallback.") var primaryDomain: String?
        @Option(help: "Base URL of magic links.") var publicBaseURL: String?
        @Option(help: "Native passwordless grants on or off.") var nativeGrants: Bool?
        @Option(help: "Access-token lifetime, minutes (1-60).") var accessTokenMinutes: Int?
        @Option(help: "Refresh-token lifetime, days (1-30).") var refreshTokenDays: Int?
        @Option(help: "Self-registration: JitOnOtp, Off or ExplicitEndpoint.") var registration: String?
        @Option(help: "Magic links on or off.") var magicLink: Bool?
        @Option(
            name: .customLong("connection"),
            help: "An Auth0 connection name apps may send as realm or connection (repeatable; '' clears the list).")
        var connections: [String] = []
        @Option(help: "Issue under <scheme>://<host>/ with Auth0's trailing slash (true|false).") var issuerTrailingSlash: Bool?
        @Option(help: "Where /magic-login offers a browser user to go (https; '' clears).") var webFallbackURL: String?
        @Option(help: "A sign-in's absolute lifetime, days (1-3650; default 90).") var sessionDays: Int?
        @Option(help: "Refresh reuse grace, seconds (0-300; default 0 = strict).") var refreshReuseGrace: Int?
        @Option(help: "Passkey changes need a sign-in this fresh, minutes (1-1440; default 10), with --passkey-step-up.")
        var enrollmentFreshness: Int?
        @Option(help: "Guard beyond the guide: enroll, rename and delete of passkeys need a fresh sign-in (true|false; default false).")
        var passkeyStepUp: Bool?
        @Option(help: "Guard beyond the guide: account endpoints take only tokens for the app or My Account (true|false; default false).")
        var accountAudience: Bool?
        @Option(
            name: .customLong("rate-limit"),
            help: "A policy's limit: NAME=LIMIT/WINDOW_SECONDS[/BURST] (repeatable), e.g. token.ip=6000/60/2000; NAME=default removes the override.")
        var rateLimits: [String] = []
        @Option(name: .customLong("rate-limit-log-only"), help: "NAME=true|false: record would-be rejections of a policy, reject nothing.")
        var rateLimitLogOnly: [String] = []
        @Option(name: .customLong("rate-limit-allow"), help: "NAME=CIDR,CIDR…: source ranges a policy never limits (empty to clear).")
        var rateLimitAllow: [String] = []
        @Option(
            name: .customLong("registration-field"),
            help: "NAME=Off|Optional|Required for Username, Firstname or Lastname (repeatable).")
        var registrationFields: [String] = []

        func apply(to settings: inout RealmSettings) throws {
            if !hosts.isEmpty { settings.hosts = hosts.map { $0.lowercased() } }
            if let displayName { settings.displayName = displayName }
            if let primaryDomain { settings.primaryDomain = primaryDomain.isEmpty ? nil : primaryDomain }
            if let publicBaseURL { settings.publicBaseURL = publicBaseURL.isEmpty ? nil : publicBaseURL }
            if let nativeGrants { settings.nativeGrants.enabled = nativeGrants }
            if let accessTokenMinutes { settings.nativeGrants.accessTokenLifetimeMinutes = accessTokenMinutes }
            if let refreshTokenDays { settings.nativeGrants.refreshTokenLifetimeDays = refreshTokenDays }
            if let registration {
                guard let posture = RegistrationPosture(rawValue: registration) else {
                    throw ValidationError("--registration is JitOnOtp, Off or ExplicitEndpoint")
                }
                settings.registrationPosture = posture
            }
            if let magicLink { settings.magicLinkEnabled = magicLink }
            if !connections.isEmpty { settings.connections = connections.filter { !$0.isEmpty } }
            if let issuerTrailingSlash { settings.issuerTrailingSlash = issuerTrailingSlash }
            if let webFallbackURL { settings.webFallbackURL = webFallbackURL.isEmpty ? nil : webFallbackURL }
            if let sessionDays { settings.sessionLimits.absoluteLifetimeDays = sessionDays }
            if let refreshReuseGrace { settings.sessionLimits.refreshReuseGraceSeconds = refreshReuseGrace }
            if let enrollmentFreshness { settings.sessionLimits.enrollmentFreshnessMinutes = enrollmentFreshness }
            if let passkeyStepUp { settings.accountGuards.passkeyStepUp = passkeyStepUp }
            if let accountAudience { settings.accountGuards.accountAudience = accountAudience }
            for text in registrationFields {
                let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let requirement = FieldRequirement(rawValue: parts[1]) else {
                    throw ValidationError("--registration-field takes NAME=Off|Optional|Required")
                }
                guard settings.registrationFields.set(parts[0], to: requirement) else {
                    throw ValidationError("--registration-field names Username, Firstname or Lastname")
                }
            }
            try applyRateLimits(to: &settings)
        }

        /// `--rate-limit`, `--rate-limit-log-only` and `--rate-limit-allow`.
        func applyRateLimits(to settings: inout RealmSettings) throws {
            for text in rateLimits {
                let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("--rate-limit takes NAME=LIMIT/WINDOW[/BURST]") }
                guard RateLimitPolicy.named(parts[0]) != nil else {
                    throw ValidationError("unknown rate-limit policy \(parts[0]); known: \(RateLimitPolicy.all.map(\.name).joined(separator: ", "))")
                }
                if parts[1] == "default" {
                    settings.rateLimitOverrides[parts[0]] = nil
                    continue
                }
                let numbers = parts[1].split(separator: "/").map { Int($0) }
                guard (2...3).contains(numbers.count), numbers.allSatisfy({ $0 != nil }) else {
                    throw ValidationError("--rate-limit takes NAME=LIMIT/WINDOW[/BURST], e.g. token.ip=6000/60/2000")
                }
                let current = settings.rateLimitOverrides[parts[0]]
                settings.rateLimitOverrides[parts[0]] = RateLimitSetting(
                    limit: numbers[0]!, windowSeconds: numbers[1]!, burst: numbers.count == 3 ? numbers[2]! : numbers[0]!,
                    logOnly: current?.logOnly, allowlist: current?.allowlist)
            }
            for text in rateLimitLogOnly + rateLimitAllow {
                let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 2, let policy = RateLimitPolicy.named(parts[0]) else {
                    throw ValidationError("--rate-limit-log-only and --rate-limit-allow take a known policy NAME=VALUE")
                }
                var setting = settings.rateLimitOverrides[policy.name] ?? policy.setting(in: settings)
                if rateLimitLogOnly.contains(text) {
                    guard let flag = Bool(parts[1]) else { throw ValidationError("--rate-limit-log-only takes NAME=true|false") }
                    setting.logOnly = flag
                } else {
                    setting.allowlist = parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                }
                settings.rateLimitOverrides[policy.name] = setting
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a realm.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Realm id (lower-case letters, digits, dashes).") var id: String
        @OptionGroup var settings: SettingsOptions
        @Option(help: "Create the realm's first signing key: ES256, or RS256 (what Auth0's SDKs verify); needs MODGUD_MASTER_KEY.")
        var signingAlgorithm: String?

        func validate() throws {
            if let signingAlgorithm, SigningKeyMaterial.Algorithm(rawValue: signingAlgorithm) == nil {
                throw ValidationError("--signing-algorithm is \(SigningKeyMaterial.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() async throws {
            var realmSettings = RealmSettings(hosts: [], displayName: settings.displayName ?? id)
            try settings.apply(to: &realmSettings)
            let algorithm = signingAlgorithm.flatMap(SigningKeyMaterial.Algorithm.init(rawValue:))
            let state = try await AdminContext.run(database) {
                try await $0.admin.realms.create(id, settings: realmSettings, signingAlgorithm: algorithm, metadata: $0.metadata)
            }
            try RealmCommand.print(state)
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a realm's settings.")
        @OptionGroup var database: DatabaseOptions
        @Argument var id: String
        @OptionGroup var settings: SettingsOptions

        func run() async throws {
            let (state, warning, inert) = try await AdminContext.run(database) { context in
                let (state, warning) = try await context.admin.realms.update(id, metadata: context.metadata) { try settings.apply(to: &$0) }
                return (state, warning, try await context.admin.clients.inertNativeGrants(realm: id))
            }
            try RealmCommand.print(state)
            RealmCommand.printInert(inert)
            if let warning { Swift.print("warning: \(warning)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List every realm: id, native grants, hosts.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            for realm in try await AdminContext.run(database, { try await $0.admin.realms.list() }) {
                Swift.print("\(realm.id)\t\(realm.nativeGrants ? "native-grants" : "-")\t\(realm.hosts.joined(separator: ","))")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a realm.")
        @OptionGroup var database: DatabaseOptions
        @Argument var id: String

        func run() async throws {
            let (state, inert) = try await AdminContext.run(database) {
                (try await $0.admin.realms.get(id), try await $0.admin.clients.inertNativeGrants(realm: id))
            }
            try RealmCommand.print(state)
            RealmCommand.printInert(inert)
        }
    }

    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key", abstract: "Create a new signing key (needs MODGUD_MASTER_KEY); old keys stay in the JWKS.")
        @OptionGroup var database: DatabaseOptions
        @Argument var id: String
        @Option(help: "ES256 or RS256.") var algorithm = "ES256"

        func run() async throws {
            guard let algorithm = SigningKeyMaterial.Algorithm(rawValue: algorithm) else {
                throw ValidationError("--algorithm is \(SigningKeyMaterial.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let kid = try await AdminContext.run(database) {
                try await $0.admin.realms.rotateSigningKey(realm: id, algorithm: algorithm, metadata: $0.metadata)
            }
            Swift.print("new signing key \(kid) (\(algorithm.rawValue)) for realm \(id)")
        }
    }

    struct RetireKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retire-key",
            abstract: "Retire a rotated-out signing key: it leaves the JWKS and its private key is destroyed.",
            discussion: """
                A key may be retired an hour after it stopped signing (the longest an access or ID
                token lives), so no live token is left unverifiable. --force retires it at once: for a
                key believed compromised, whose tokens should stop verifying now.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var id: String
        @Argument(help: "The key id (kid), as `realm show` lists it.") var kid: String
        @Flag(help: "Retire it before the overlap has passed.") var force = false

        func run() async throws {
            let retired = try await AdminContext.run(database) {
                try await $0.admin.realms.retireSigningKey(realm: id, kid: kid, force: force, metadata: $0.metadata)
            }
            Swift.print(retired ? "retired signing key \(kid) of realm \(id)" : "signing key \(kid) of realm \(id) was retired already")
        }
    }

    /// Issue 65, item 7: clients whose native grants do nothing while the realm's flag is off.
    static func printInert(_ clients: [(id: String, grants: [GrantType])]) {
        guard !clients.isEmpty else { return }
        let listed = clients.map { "\($0.id) (\($0.grants.map(\.rawValue).joined(separator: ", ")))" }.joined(separator: ", ")
        Swift.print("inert        native grants (realm flag off; --native-grants true turns them on): \(listed)")
    }

    static func print(_ state: Realm.State) throws {
        guard let id = state.id, let settings = state.settings else { throw CommandError("no such realm") }
        Swift.print("realm        \(id)")
        Swift.print("hosts        \(settings.hosts.joined(separator: ", "))")
        Swift.print("display name \(settings.displayName)")
        Swift.print("primary dom. \(settings.primaryDomain ?? "-")")
        Swift.print(
            "native       \(settings.nativeGrants.enabled ? "on" : "off") (access \(settings.nativeGrants.accessTokenLifetimeMinutes) min, refresh \(settings.nativeGrants.refreshTokenLifetimeDays) d)")
        let magic = settings.magicLinkEnabled.map { $0 ? "on (set)" : "off (set; --magic-link true turns them on)" } ?? "on"
        let posture = settings.registrationPosture.rawValue + (settings.chosenRegistrationPosture == nil ? " (default)" : "")
        Swift.print("registration \(posture), magic links \(magic)")
        Swift.print("issuer       <scheme>://<host>" + (settings.issuerTrailingSlash ? "/" : ""))
        Swift.print("connections  " + ([id] + ["email", "Username-Password-Authentication"] + settings.connections).joined(separator: ", "))
        Swift.print(
            "sessions     \(settings.sessionLimits.absoluteLifetimeDays) d at most, refresh reuse grace \(settings.sessionLimits.refreshReuseGraceSeconds) s")
        let guards = settings.accountGuards
        Swift.print(
            "guards       passkey step-up \(guards.passkeyStepUp ? "on (\(settings.sessionLimits.enrollmentFreshnessMinutes) min)" : "off"), account audience \(guards.accountAudience ? "on" : "off")")
        let fields = settings.registrationFields
        Swift.print(
            "fields       Email Required, Username \(fields.username.rawValue), Firstname \(fields.firstname.rawValue), Lastname \(fields.lastname.rawValue)")
        for policy in RateLimitPolicy.all {
            let effective = policy.setting(in: settings)
            var origin = settings.rateLimitOverrides[policy.name] == nil ? "default" : "set"
            if effective.logOnly == true { origin += ", log-only" }
            if let allowlist = effective.allowlist, !allowlist.isEmpty { origin += ", allow \(allowlist.joined(separator: " "))" }
            Swift.print(
                "rate limit   \(policy.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(effective.limit)/\(effective.windowSeconds)s burst \(effective.burst) (\(origin))")
        }
        let keys = state.signingKeys.map { key in
            "\(key.kid) \(key.algorithm)" + (key.kid == state.activeKey?.kid ? " (active)" : state.retiredKids.contains(key.kid) ? " (retired)" : "")
        }
        Swift.print("keys         \(keys.joined(separator: ", "))")
        for provider in settings.federatedProviders ?? [] {
            var line = "provider     \(provider.id) (\(provider.kind.rawValue)) aud \(provider.audiences.joined(separator: " ")), linking \(provider.linking.rawValue)"
            line += provider.requireNonce ? ", nonce required" : ", nonce optional"
            if let apple = provider.appleTokenEndpoint { line += ", Apple key \(apple.keyID) of team \(apple.teamID) for \(apple.clientID)" }
            Swift.print(line)
        }
    }
}
