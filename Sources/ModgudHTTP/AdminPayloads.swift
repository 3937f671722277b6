import Crypto
import Foundation
import ModgudDomain
import ModgudService

/// Admin API bodies: PascalCase like the rest of Modgud's own JSON (docs/spec.md section 0).
enum AdminPayloads {
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

    struct Client: Codable {
        var Id: String?
        var `Type`: String?
        var DisplayName: String?
        var Grants: [String]?
        var Scopes: [String]?
        var Audiences: [String]?
        var RpId: String?
        var AndroidOrigins: [String]?
        var AccessTokenFormat: String?
        var PasskeySignUp: Bool?
        var AppleAppIds: [String]?
        var AndroidApps: [AndroidAppBody]?
        /// DPoP at the token endpoint: off, allowed (the default) or required (RFC 9449).
        var Dpop: String?
        /// Every DPoP proof must carry a server nonce (RFC 9449 section 8).
        var DpopNonce: Bool?
        /// The audience of a token asked for without one ("" clears: the client itself).
        var DefaultAudience: String?
        /// Audiences a refresh may switch to, with their scopes (Auth0's multi-resource refresh).
        var RefreshTokenPolicies: [RefreshPolicyBody]?
        /// Attestation-based client authentication (issue 47): off (the default), allowed or required.
        var ClientAttestation: String?
        /// App Attest environments accepted: production (the default) or production+development.
        var AppAttestEnvironments: String?
        /// The iOS app's custom URL scheme `/magic-login` opens it with (issue 65, item 6); "" clears.
        var AppUrlScheme: String?
        /// Read only: the Android apps whose Play Integrity keys are set, set and removed at
        /// `…/clients/{client}/play-integrity/{package}`.
        var PlayIntegrity: [PlayIntegrityView]?

        static let members: Set<String> = [
            "Id", "Type", "DisplayName", "Grants", "Scopes", "Audiences", "RpId", "AndroidOrigins", "AccessTokenFormat", "PasskeySignUp",
            "AppleAppIds", "AndroidApps", "Dpop", "DpopNonce", "DefaultAudience", "RefreshTokenPolicies",
            "ClientAttestation", "AppAttestEnvironments", "AppUrlScheme",
        ]

        func apply(to settings: inout ClientSettings) throws(AdminProblem) {
            if let DisplayName { settings.displayName = DisplayName }
            if let Grants {
                var grants = Set<GrantType>()
                for name in Grants {
                    guard let grant = GrantType(rawValue: name) else { throw AdminProblem("Client.UnknownGrant", "Unknown grant \(name).") }
                    grants.insert(grant)
                }
                settings.grants = grants
            }
            if let Scopes { settings.allowedScopes = Set(Scopes) }
            if let Audiences { settings.audiences = Set(Audiences) }
            if let RpId { settings.rpID = RpId.isEmpty ? nil : RpId }
            if let AndroidOrigins { settings.androidOrigins = Set(AndroidOrigins) }
            if let PasskeySignUp { settings.passkeySignUp = PasskeySignUp }
            if let AppleAppIds { settings.appleAppIDs = Set(AppleAppIds) }
            if let AndroidApps {
                settings.androidApps = AndroidApps.map { AndroidApp(packageName: $0.PackageName, sha256Fingerprints: $0.Sha256CertFingerprints) }
            }
            if let AccessTokenFormat {
                guard let format = ModgudDomain.AccessTokenFormat(rawValue: AccessTokenFormat) else {
                    throw AdminProblem("Client.InvalidAccessTokenFormat", "AccessTokenFormat is reference or jwt.")
                }
                settings.accessTokenFormat = format
            }
            if let Dpop {
                guard let policy = DPoPPolicy(rawValue: Dpop) else { throw AdminProblem("Client.InvalidDpop", "Dpop is off, allowed or required.") }
                settings.dpop = policy
            }
            if let DpopNonce { settings.dpopNonce = DpopNonce }
            if let DefaultAudience { settings.defaultAudience = DefaultAudience.isEmpty ? nil : DefaultAudience }
            if let RefreshTokenPolicies { settings.refreshTokenPolicies = RefreshTokenPolicies.map { RefreshTokenPolicy(audience: $0.Audience, scopes: $0.Scopes) } }
            if let ClientAttestation {
                guard let mode = ClientAttestationMode(rawValue: ClientAttestation) else {
                    throw AdminProblem("Client.InvalidClientAttestation", "ClientAttestation is off, allowed or required.")
                }
                settings.clientAttestation = mode
            }
            if let AppAttestEnvironments {
                guard let environments = ModgudDomain.AppAttestEnvironments(rawValue: AppAttestEnvironments) else {
                    throw AdminProblem("Client.InvalidAppAttestEnvironments", "AppAttestEnvironments is production or production+development.")
                }
                settings.appAttestEnvironments = environments
            }
            if let AppUrlScheme { settings.appURLScheme = AppUrlScheme.isEmpty ? nil : AppUrlScheme }
        }
    }

    /// A refresh policy: `{ "Audience", "Scopes": […] }`.
    struct RefreshPolicyBody: Codable {
        var Audience: String
        var Scopes: [String]
    }

    /// An Android app of a client: `{ "PackageName", "Sha256CertFingerprints": ["AB:CD:…"] }`;
    /// other members are refused like top-level ones.
    struct AndroidAppBody: Codable {
        var PackageName: String
        var Sha256CertFingerprints: [String]

        init(PackageName: String, Sha256CertFingerprints: [String]) {
            self.PackageName = PackageName
            self.Sha256CertFingerprints = Sha256CertFingerprints
        }

        private struct Member: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Member.self)
            if let unknown = container.allKeys.first(where: { !["PackageName", "Sha256CertFingerprints"].contains($0.stringValue) }) {
                throw DecodingError.typeMismatch(
                    AndroidAppBody.self, .init(codingPath: container.codingPath + [unknown], debugDescription: "unknown member"))
            }
            PackageName = try container.decode(String.self, forKey: Member(stringValue: "PackageName"))
            Sha256CertFingerprints = try container.decode([String].self, forKey: Member(stringValue: "Sha256CertFingerprints"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Member.self)
            try container.encode(PackageName, forKey: Member(stringValue: "PackageName"))
            try container.encode(Sha256CertFingerprints, forKey: Member(stringValue: "Sha256CertFingerprints"))
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

    static func clientView(_ state: ModgudDomain.Client.State) -> Client {
        let settings = state.settings
        return Client(
            Id: state.id, Type: settings?.type.rawValue, DisplayName: settings?.displayName, Grants: settings?.grants.sorted().map(\.rawValue),
            Scopes: settings?.allowedScopes.sorted(), Audiences: settings?.audiences.sorted(), RpId: settings?.rpID,
            AndroidOrigins: settings?.androidOrigins.sorted(), AccessTokenFormat: settings?.accessTokenFormat.rawValue,
            PasskeySignUp: settings?.passkeySignUp, AppleAppIds: settings?.appleAppIDs.sorted(),
            AndroidApps: settings?.androidApps.map { AndroidAppBody(PackageName: $0.packageName, Sha256CertFingerprints: $0.sha256Fingerprints) },
            Dpop: settings?.dpop.rawValue, DpopNonce: settings?.dpopNonce, DefaultAudience: settings?.defaultAudience,
            RefreshTokenPolicies: settings?.refreshTokenPolicies.map { RefreshPolicyBody(Audience: $0.audience, Scopes: $0.scopes) },
            ClientAttestation: settings?.clientAttestation.rawValue, AppAttestEnvironments: settings?.appAttestEnvironments.rawValue,
            AppUrlScheme: settings?.appURLScheme,
            PlayIntegrity: state.playIntegrity.sorted { $0.key < $1.key }.map { PlayIntegrityView(packageName: $0.key, $0.value) })
    }

    /// `PUT …/clients/{client}/play-integrity/{package}`: the Play Console's two keys, as it
    /// shows them (base64).
    struct PlayIntegrityKeysBody: Decodable {
        var DecryptionKey: String
        var VerificationKey: String
        static let members: Set<String> = ["DecryptionKey", "VerificationKey"]
    }

    /// An app's Play Integrity keys as the admin API shows them: never the decryption key.
    struct PlayIntegrityView: Codable {
        var PackageName: String
        /// Base64 of the DER public key, as set.
        var VerificationKey: String
        /// SHA-256 of the verification key's DER, hex: to compare with the Play Console.
        var VerificationKeySha256: String

        init(packageName: String, _ keys: PlayIntegrityKeys) {
            PackageName = packageName
            VerificationKey = keys.verificationKey
            VerificationKeySha256 = SHA256.hash(data: Data(base64Encoded: keys.verificationKey) ?? Data()).map { String(format: "%02x", $0) }.joined()
        }
    }

    /// The answer to `DELETE /admin/api/realms/{r}/users/{u}?erase=true`.
    struct Erasure: Encodable {
        var Id: String?
        var Status = "erased"
        /// False when the user had been erased already (the call only finished what remained).
        var ErasedNow: Bool
        var FamiliesRevoked: Int
        var PasskeysDeleted: Int
        var KeysShredded: Int
        var MailDeleted: Int

        init(_ outcome: UserEraser.Outcome) {
            Id = outcome.userID?.uuidString.lowercased()
            ErasedNow = outcome.erasedNow
            FamiliesRevoked = outcome.familiesRevoked
            PasskeysDeleted = outcome.passkeysDeleted
            KeysShredded = outcome.keysShredded
            MailDeleted = outcome.mailDeleted
        }
    }
}

/// A refusal of the admin API: a problem with a named title.
struct AdminProblem: Error {
    var title: String
    var detail: String
    var status: Int

    init(_ title: String, _ detail: String, status: Int = 400) {
        self.title = title
        self.detail = detail
        self.status = status
    }
}
