import Foundation
import ModgudDomain
import ModgudService

/// The admin API's realm bodies and views (PascalCase JSON; docs/api.md, "Administration API").
extension AdminPayloads {
    struct NativeGrants: Codable {
        var Enabled: Bool?
        var AccessTokenLifetimeMinutes: Int?
        var RefreshTokenLifetimeDays: Int?
    }

    /// One rate-limit policy's setting; in views also whether it is the default.
    struct RateLimit: Codable {
        var Limit: Int
        var WindowSeconds: Int
        var Burst: Int?
        /// Count and record would-be rejections, reject nothing.
        var LogOnly: Bool?
        /// Source ranges (CIDR) never limited by this policy.
        var Allowlist: [String]?
        var Default: Bool?
    }

    /// The guards beyond the native-app guide (issue 65), each off by default.
    struct Guards: Codable {
        /// Passkey changes need a sign-in at most `EnrollmentFreshnessMinutes` old.
        var PasskeyStepUp: Bool?
        /// The account endpoints take only tokens for the app or My Account.
        var AccountAudience: Bool?
    }

    struct SessionLimits: Codable {
        var AbsoluteLifetimeDays: Int?
        var RefreshReuseGraceSeconds: Int?
        var EnrollmentFreshnessMinutes: Int?
    }

    /// Creating (all required members present) or patching a realm (members optional).
    struct Realm: Codable {
        var Id: String?
        var Hosts: [String]?
        var DisplayName: String?
        var PrimaryDomain: String?
        var PublicBaseURL: String?
        var NativeGrants: NativeGrants?
        var RegistrationPosture: String?
        var MagicLinkEnabled: Bool?
        /// `Username`, `Firstname`, `Lastname`: `Off`, `Optional` or `Required` (`Email` is always
        /// `Required`; views list it).
        var RegistrationFields: [String: String]?
        /// By policy name (`token.ip`, …); in a patch, `null` restores the default.
        var RateLimits: [String: RateLimit?]?
        var SessionLimits: SessionLimits?
        /// Guards beyond the guide (issue 65); in a patch, members left out keep their value.
        var Guards: Guards?
        /// Auth0 connection names besides the realm id, `email` and
        /// `Username-Password-Authentication` (issue 24); a patch replaces the list.
        var Connections: [String]?
        /// `<scheme>://<host>/` as the issuer (Auth0's form).
        var IssuerTrailingSlash: Bool?
        /// Where `/magic-login` offers a browser user to go; "" clears.
        var WebFallbackURL: String?
        /// On creation only: make the realm's first signing key, `ES256` or `RS256` (what
        /// Auth0's SDKs verify). Views list the keys in `SigningKeys` instead.
        var SigningAlgorithm: String?
        /// In views: every key, newest first.
        var SigningKeys: [SigningKey]?
        /// Identity providers whose ID tokens the token endpoint exchanges (issue 48); a patch
        /// replaces the list.
        var FederatedProviders: [FederatedProviderBody]?
        /// Native SSO teams (issue 69): `[{ Name, Clients }]`; a patch replaces the list.
        var NativeSSOTeams: [NativeSSOTeamBody]?

        struct NativeSSOTeamBody: Codable {
            var Name: String
            var Clients: [String]

            /// The realm's teams from a patch's list (empty: none).
            static func teams(_ bodies: [NativeSSOTeamBody]) -> [NativeSSOTeam]? {
                bodies.isEmpty ? nil : bodies.map { NativeSSOTeam(name: $0.Name, clients: $0.Clients) }
            }
        }

        static let members: Set<String> = [
            "Id", "Hosts", "DisplayName", "PrimaryDomain", "PublicBaseURL", "NativeGrants", "RegistrationPosture", "MagicLinkEnabled",
            "RegistrationFields", "RateLimits", "SessionLimits", "Connections", "IssuerTrailingSlash", "WebFallbackURL", "SigningAlgorithm",
            "FederatedProviders", "Guards", "NativeSSOTeams",
        ]

        func apply(to settings: inout RealmSettings) throws(AdminProblem) {
            if let Hosts { settings.hosts = Hosts.map { $0.lowercased() } }
            if let DisplayName { settings.displayName = DisplayName }
            if let PrimaryDomain { settings.primaryDomain = PrimaryDomain.isEmpty ? nil : PrimaryDomain }
            if let PublicBaseURL { settings.publicBaseURL = PublicBaseURL.isEmpty ? nil : PublicBaseURL }
            if let grants = NativeGrants {
                if let enabled = grants.Enabled { settings.nativeGrants.enabled = enabled }
                if let minutes = grants.AccessTokenLifetimeMinutes { settings.nativeGrants.accessTokenLifetimeMinutes = minutes }
                if let days = grants.RefreshTokenLifetimeDays { settings.nativeGrants.refreshTokenLifetimeDays = days }
            }
            if let RegistrationPosture {
                guard let posture = ModgudDomain.RegistrationPosture(rawValue: RegistrationPosture) else {
                    throw AdminProblem("Realm.InvalidRegistrationPosture", "RegistrationPosture is JitOnOtp, Off or ExplicitEndpoint.")
                }
                settings.registrationPosture = posture
            }
            if let MagicLinkEnabled { settings.magicLinkEnabled = MagicLinkEnabled }
            if let Connections { settings.connections = Connections }
            if let IssuerTrailingSlash { settings.issuerTrailingSlash = IssuerTrailingSlash }
            if let WebFallbackURL { settings.webFallbackURL = WebFallbackURL.isEmpty ? nil : WebFallbackURL }
            if let FederatedProviders {
                var providers = try FederatedProviders.map { (body) throws(AdminProblem) in try body.provider() }
                // An Apple provider keeps its sealed key across a patch of the list (the key is set apart).
                let before = settings.federatedProviders ?? []
                for index in providers.indices where providers[index].kind == .apple {
                    providers[index].appleTokenEndpoint = before.first { $0.id == providers[index].id && $0.kind == .apple }?.appleTokenEndpoint
                }
                settings.federatedProviders = providers.isEmpty ? nil : providers
            }
            if let NativeSSOTeams { settings.nativeSSOTeams = NativeSSOTeamBody.teams(NativeSSOTeams) }
            if let limits = SessionLimits {
                if let days = limits.AbsoluteLifetimeDays { settings.sessionLimits.absoluteLifetimeDays = days }
                if let grace = limits.RefreshReuseGraceSeconds { settings.sessionLimits.refreshReuseGraceSeconds = grace }
                if let minutes = limits.EnrollmentFreshnessMinutes { settings.sessionLimits.enrollmentFreshnessMinutes = minutes }
            }
            if let Guards {
                if let on = Guards.PasskeyStepUp { settings.accountGuards.passkeyStepUp = on }
                if let on = Guards.AccountAudience { settings.accountGuards.accountAudience = on }
            }
            for (field, value) in RegistrationFields ?? [:] {
                if field == "Email" && value == "Required" { continue }
                guard let requirement = FieldRequirement(rawValue: value) else {
                    throw AdminProblem("Realm.InvalidFieldRequirement", "\(field) is Off, Optional or Required.")
                }
                guard settings.registrationFields.set(field, to: requirement) else {
                    throw AdminProblem("Realm.UnknownRegistrationField", "Registration fields are Username, Firstname and Lastname (Email is always required).")
                }
            }
            for (name, limit) in RateLimits ?? [:] {
                guard RateLimitPolicy.named(name) != nil else {
                    throw AdminProblem(
                        "RateLimit.UnknownPolicy", "Unknown rate-limit policy \(name); known: \(RateLimitPolicy.all.map(\.name).joined(separator: ", ")).")
                }
                settings.rateLimitOverrides[name] = limit.map {
                    RateLimitSetting(
                        limit: $0.Limit, windowSeconds: $0.WindowSeconds, burst: $0.Burst ?? $0.Limit, logOnly: $0.LogOnly,
                        allowlist: $0.Allowlist)
                }
            }
        }
    }

    static func realmView(_ state: ModgudDomain.Realm.State) -> Realm {
        let settings = state.settings
        return Realm(
            Id: state.id, Hosts: settings?.hosts, DisplayName: settings?.displayName, PrimaryDomain: settings?.primaryDomain,
            PublicBaseURL: settings?.publicBaseURL,
            NativeGrants: settings.map {
                NativeGrants(
                    Enabled: $0.nativeGrants.enabled, AccessTokenLifetimeMinutes: $0.nativeGrants.accessTokenLifetimeMinutes,
                    RefreshTokenLifetimeDays: $0.nativeGrants.refreshTokenLifetimeDays)
            }, RegistrationPosture: settings?.registrationPosture.rawValue, MagicLinkEnabled: settings?.magicLinksOn,
            RegistrationFields: settings.map {
                [
                    "Email": "Required", "Username": $0.registrationFields.username.rawValue, "Firstname": $0.registrationFields.firstname.rawValue,
                    "Lastname": $0.registrationFields.lastname.rawValue,
                ]
            },
            RateLimits: settings.map { settings in
                Dictionary(
                    uniqueKeysWithValues: RateLimitPolicy.all.map { policy in
                        let effective = policy.setting(in: settings)
                        return (
                            policy.name,
                            RateLimit(
                                Limit: effective.limit, WindowSeconds: effective.windowSeconds, Burst: effective.burst,
                                LogOnly: effective.logOnly ?? false, Allowlist: effective.allowlist ?? [],
                                Default: settings.rateLimitOverrides[policy.name] == nil)
                        )
                    })
            },
            SessionLimits: settings.map {
                SessionLimits(
                    AbsoluteLifetimeDays: $0.sessionLimits.absoluteLifetimeDays, RefreshReuseGraceSeconds: $0.sessionLimits.refreshReuseGraceSeconds,
                    EnrollmentFreshnessMinutes: $0.sessionLimits.enrollmentFreshnessMinutes)
            },
            Guards: settings.map { Guards(PasskeyStepUp: $0.accountGuards.passkeyStepUp, AccountAudience: $0.accountGuards.accountAudience) },
            Connections: settings?.connections, IssuerTrailingSlash: settings?.issuerTrailingSlash,
            WebFallbackURL: settings?.webFallbackURL, SigningKeys: signingKeys(state),
            FederatedProviders: settings.map { ($0.federatedProviders ?? []).map(FederatedProviderBody.init) },
            NativeSSOTeams: settings.map { ($0.nativeSSOTeams ?? []).map { Realm.NativeSSOTeamBody(Name: $0.name, Clients: $0.clients) } })
    }

    /// A realm's signing key as views list it: `Status` is `active`, `published` (rotated out,
    /// still in the JWKS) or `retired`; `RetirableAt` is when a published key may be retired.
    struct SigningKey: Codable {
        var Kid: String
        var Algorithm: String
        /// ISO 8601.
        var RotatedAt: String
        var Status: String
        var RetirableAt: String?
    }

    static func signingKeys(_ state: ModgudDomain.Realm.State) -> [SigningKey] {
        state.signingKeys.reversed().map { key in
            let status = key.kid == state.activeKey?.kid ? "active" : state.retiredKids.contains(key.kid) ? "retired" : "published"
            return SigningKey(
                Kid: key.kid, Algorithm: key.algorithm, RotatedAt: key.rotatedAt.formatted(.iso8601), Status: status,
                RetirableAt: status == "published"
                    ? state.rotatedOutAt(key.kid)?.addingTimeInterval(ModgudDomain.Realm.retirementOverlap).formatted(.iso8601) : nil)
        }
    }
}
