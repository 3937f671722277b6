/// Everything an administrator sets on a realm (docs/spec.md section 1).
public struct RealmSettings: Codable, Hashable, Sendable {
    /// Hosts whose requests belong to this realm (lower case, no port).
    public var hosts: [String]
    public var displayName: String
    /// Passkey RP-ID fallback when a client has none.
    public var primaryDomain: String?
    /// Base of magic links (`https://login.example.com`).
    public var publicBaseURL: String?
    public var nativeGrants: NativeGrantSettings
    /// The posture an operator chose; nil: none was, and the seed's default applies
    /// (`registrationPosture`). Realms created before issue 41 recorded one and keep it.
    public var chosenRegistrationPosture: RegistrationPosture?
    /// Who may self-register: the chosen posture, else `JitOnOtp`, seed 001's default for an
    /// app's sign-ins (it matters only once native grants are on). Setting it records a choice.
    public var registrationPosture: RegistrationPosture {
        get { chosenRegistrationPosture ?? .jitOnOtp }
        set { chosenRegistrationPosture = newValue }
    }
    public var registrationFields: RegistrationFields
    /// Magic links (issue 25): nil follows the seed, on with native grants and a client holding
    /// `urn:cocoar:magic`; false turns them off explicitly (400 `MagicLink.Disabled`). Realms
    /// created before issue 25 recorded a Bool and keep it (docs/operations/production.md).
    public var magicLinkEnabled: Bool?

    /// Whether the realm lets magic links be requested (the client's grant is checked apart).
    public var magicLinksOn: Bool { magicLinkEnabled ?? true }
    /// Per-policy overrides of the rate limits (policy name → limit).
    public var rateLimitOverrides: [String: RateLimitSetting]
    /// How long a sign-in lasts at most, and the refresh reuse grace (docs/spec.md sections 1 and 5).
    public var sessionLimits: SessionLimits
    /// Connection names Auth0 apps may send as `realm` or `connection` besides the realm's id,
    /// `email` and `Username-Password-Authentication` (issue 24). Empty by default.
    public var connections: [String]
    /// Issue tokens and publish discovery under `<scheme>://<host>/`, with the trailing slash
    /// Auth0 uses, so Auth0's SDKs and API middleware validate `iss` unchanged (issue 24).
    /// Off by default: `<scheme>://<host>`.
    public var issuerTrailingSlash: Bool
    /// Where `/magic-login` sends a user whose link reached a browser (the web app's sign-in);
    /// https (http only for localhost). None by default: the page offers no web way in.
    public var webFallbackURL: String?
    /// Identity providers whose ID tokens the token endpoint exchanges (issue 48); nil is none
    /// (and keeps the bytes of settings recorded before).
    public var federatedProviders: [FederatedProvider]?
    /// The guards chosen beyond the guide (issue 65); nil is every one off and keeps the bytes
    /// of settings recorded before. Read `accountGuards`.
    public var guards: AccountGuards?
    /// The vendors' app teams that share a sign-in on a device (Native SSO; issue 69); nil is
    /// none (and keeps the bytes of settings recorded before).
    public var nativeSSOTeams: [NativeSSOTeam]?

    /// The Native SSO team `clientID` belongs to, if any.
    public func nativeSSOTeam(of clientID: String) -> NativeSSOTeam? {
        nativeSSOTeams?.first { $0.clients.contains(clientID) }
    }

    /// The guards in force: the chosen ones, else all off (the guide's behaviour).
    public var accountGuards: AccountGuards {
        get { guards ?? AccountGuards() }
        set { guards = newValue == AccountGuards() ? nil : newValue }
    }

    public init(
        hosts: [String], displayName: String, primaryDomain: String? = nil, publicBaseURL: String? = nil,
        nativeGrants: NativeGrantSettings = NativeGrantSettings(), registrationPosture: RegistrationPosture? = nil,
        registrationFields: RegistrationFields = RegistrationFields(), magicLinkEnabled: Bool? = nil,
        rateLimitOverrides: [String: RateLimitSetting] = [:], sessionLimits: SessionLimits = SessionLimits(),
        connections: [String] = [], issuerTrailingSlash: Bool = false, webFallbackURL: String? = nil
    ) {
        self.webFallbackURL = webFallbackURL
        self.connections = connections
        self.issuerTrailingSlash = issuerTrailingSlash
        self.sessionLimits = sessionLimits
        self.hosts = hosts
        self.displayName = displayName
        self.primaryDomain = primaryDomain
        self.publicBaseURL = publicBaseURL
        self.nativeGrants = nativeGrants
        self.chosenRegistrationPosture = registrationPosture
        self.registrationFields = registrationFields
        self.magicLinkEnabled = magicLinkEnabled
        self.rateLimitOverrides = rateLimitOverrides
    }

    /// Checks every value against docs/spec.md section 1; the first problem found is reported.
    public func validate() throws(DomainError) {
        guard !hosts.isEmpty else { throw DomainError("Realm.HostsRequired", "A realm needs at least one host.") }
        for host in hosts where !Self.isValidHost(host) {
            throw DomainError("Realm.InvalidHost", "\(host) is not a host name (lower case, no scheme, port or path).")
        }
        guard Set(hosts).count == hosts.count else { throw DomainError("Realm.DuplicateHost", "A host is listed twice.") }
        guard !displayName.trimmingCharacters(in: .whitespaces).isEmpty, displayName.count <= 200 else {
            throw DomainError("Realm.InvalidDisplayName", "The display name must be 1 to 200 characters.")
        }
        if let primaryDomain, !Self.isValidHost(primaryDomain) {
            throw DomainError("Realm.InvalidPrimaryDomain", "\(primaryDomain) is not a domain name.")
        }
        if let publicBaseURL, !(publicBaseURL.hasPrefix("https://") || publicBaseURL.hasPrefix("http://localhost")) {
            throw DomainError("Realm.InvalidPublicBaseURL", "The public base URL must be https (http only for localhost).")
        }
        try nativeGrants.validate()
        try sessionLimits.validate()
        if let webFallbackURL, !(webFallbackURL.hasPrefix("https://") || webFallbackURL.hasPrefix("http://localhost")) || webFallbackURL.count > 2000 {
            throw DomainError("Realm.InvalidWebFallbackURL", "The web fallback URL must be https (http only for localhost).")
        }
        for provider in federatedProviders ?? [] { try provider.validate() }
        try NativeSSOTeam.validate(nativeSSOTeams ?? [])
        if let providers = federatedProviders, Set(providers.map(\.id)).count != providers.count {
            throw DomainError("Federation.DuplicateId", "Two providers have the same id.")
        }
        for name in connections where !Self.isValidConnectionName(name) {
            throw DomainError("Realm.InvalidConnection", "\(name) is not a connection name (1 to 128 letters, digits, '-', '_' or '.').")
        }
        for (policy, limit) in rateLimitOverrides {
            guard limit.limit > 0, limit.windowSeconds > 0, limit.burst >= 0 else {
                throw DomainError("RateLimit.Invalid", "The rate limit \(policy) needs a positive limit and window.")
            }
            for range in limit.allowlist ?? [] where SourceCIDR(range) == nil {
                throw DomainError("RateLimit.InvalidAllowlist", "\(range) is not an address range (CIDR) in the allowlist of \(policy).")
            }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case hosts, displayName, primaryDomain, publicBaseURL, nativeGrants, registrationFields, magicLinkEnabled, rateLimitOverrides
        case sessionLimits, connections, issuerTrailingSlash, webFallbackURL, federatedProviders, guards, nativeSSOTeams
        case chosenRegistrationPosture = "registrationPosture"
    }

    /// Settings recorded before a member existed decode with its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        hosts = try container.decode([String].self, forKey: .hosts)
        displayName = try container.decode(String.self, forKey: .displayName)
        primaryDomain = try container.decodeIfPresent(String.self, forKey: .primaryDomain)
        publicBaseURL = try container.decodeIfPresent(String.self, forKey: .publicBaseURL)
        nativeGrants = try container.decode(NativeGrantSettings.self, forKey: .nativeGrants)
        chosenRegistrationPosture = try container.decodeIfPresent(RegistrationPosture.self, forKey: .chosenRegistrationPosture)
        registrationFields = try container.decode(RegistrationFields.self, forKey: .registrationFields)
        magicLinkEnabled = try container.decodeIfPresent(Bool.self, forKey: .magicLinkEnabled)
        rateLimitOverrides = try container.decode([String: RateLimitSetting].self, forKey: .rateLimitOverrides)
        sessionLimits = try container.decodeIfPresent(SessionLimits.self, forKey: .sessionLimits) ?? SessionLimits()
        connections = try container.decodeIfPresent([String].self, forKey: .connections) ?? []
        issuerTrailingSlash = try container.decodeIfPresent(Bool.self, forKey: .issuerTrailingSlash) ?? false
        webFallbackURL = try container.decodeIfPresent(String.self, forKey: .webFallbackURL)
        federatedProviders = try container.decodeIfPresent([FederatedProvider].self, forKey: .federatedProviders)
        guards = try container.decodeIfPresent(AccountGuards.self, forKey: .guards)
        nativeSSOTeams = try container.decodeIfPresent([NativeSSOTeam].self, forKey: .nativeSSOTeams)
    }

    /// Auth0's connection names: 1 to 128 ASCII letters, digits, `-`, `_` and `.`.
    static func isValidConnectionName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 128 && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
    }

    static func isValidHost(_ host: String) -> Bool {
        guard !host.isEmpty, host.count <= 253, host == host.lowercased() else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}

/// The native passwordless grants switch and token lifetimes (docs/spec.md sections 1 and 5).
public struct NativeGrantSettings: Codable, Hashable, Sendable {
    public var enabled: Bool
    /// Access-token lifetime in minutes, 1–60 (default 15).
    public var accessTokenLifetimeMinutes: Int
    /// Refresh-token lifetime in days, 1–30 (default 14).
    public var refreshTokenLifetimeDays: Int

    public init(enabled: Bool = false, accessTokenLifetimeMinutes: Int = 15, refreshTokenLifetimeDays: Int = 14) {
        self.enabled = enabled
        self.accessTokenLifetimeMinutes = accessTokenLifetimeMinutes
        self.refreshTokenLifetimeDays = refreshTokenLifetimeDays
    }

    /// The valid access-token lifetimes, minutes (forms take their bounds from here).
    public static let accessTokenLifetimeRange = 1...60
    /// The valid refresh-token lifetimes, days.
    public static let refreshTokenLifetimeRange = 1...30

    public func validate() throws(DomainError) {
        guard Self.accessTokenLifetimeRange.contains(accessTokenLifetimeMinutes) else {
            throw DomainError("NativeGrants.InvalidAccessTokenLifetime", "The access-token lifetime must be 1 to 60 minutes.")
        }
        guard Self.refreshTokenLifetimeRange.contains(refreshTokenLifetimeDays) else {
            throw DomainError("NativeGrants.InvalidRefreshTokenLifetime", "The refresh-token lifetime must be 1 to 30 days.")
        }
    }
}

/// A sign-in's limits (docs/spec.md sections 1 and 5).
public struct SessionLimits: Codable, Hashable, Sendable {
    /// A refresh-token family is refused this many days after its sign-in, however often it
    /// was refreshed (default 90, valid 1–3650): rotation slides, this does not.
    public var absoluteLifetimeDays: Int
    /// Seconds after a rotation in which the refresh token just spent may be presented once
    /// more without revoking the family (default 0: strict, valid 0–300). See docs/configuration.md.
    public var refreshReuseGraceSeconds: Int
    /// How recent a sign-in must be for its access token to enroll a passkey (default 10,
    /// valid 1–1440 minutes; issue 14). A token with `PasskeyEnrollment.scope` may enroll
    /// whatever its age. A stolen token is thus not a permanent way into the account.
    public var enrollmentFreshnessMinutes: Int

    public init(absoluteLifetimeDays: Int = 90, refreshReuseGraceSeconds: Int = 0, enrollmentFreshnessMinutes: Int = 10) {
        self.absoluteLifetimeDays = absoluteLifetimeDays
        self.refreshReuseGraceSeconds = refreshReuseGraceSeconds
        self.enrollmentFreshnessMinutes = enrollmentFreshnessMinutes
    }

    private enum CodingKeys: String, CodingKey {
        case absoluteLifetimeDays, refreshReuseGraceSeconds, enrollmentFreshnessMinutes
    }

    /// Settings recorded before a member existed decode with its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        absoluteLifetimeDays = try container.decodeIfPresent(Int.self, forKey: .absoluteLifetimeDays) ?? 90
        refreshReuseGraceSeconds = try container.decodeIfPresent(Int.self, forKey: .refreshReuseGraceSeconds) ?? 0
        enrollmentFreshnessMinutes = try container.decodeIfPresent(Int.self, forKey: .enrollmentFreshnessMinutes) ?? 10
    }

    /// The valid absolute lifetimes, days (forms take their bounds from here).
    public static let absoluteLifetimeRange = 1...3650
    /// The valid reuse graces, seconds.
    public static let reuseGraceRange = 0...300
    /// The valid enrollment freshness, minutes.
    public static let enrollmentFreshnessRange = 1...1440

    public func validate() throws(DomainError) {
        guard Self.absoluteLifetimeRange.contains(absoluteLifetimeDays) else {
            throw DomainError("Session.InvalidAbsoluteLifetime", "The absolute session lifetime must be 1 to 3650 days.")
        }
        guard Self.reuseGraceRange.contains(refreshReuseGraceSeconds) else {
            throw DomainError("Session.InvalidReuseGrace", "The refresh reuse grace must be 0 to 300 seconds.")
        }
        guard Self.enrollmentFreshnessRange.contains(enrollmentFreshnessMinutes) else {
            throw DomainError("Session.InvalidEnrollmentFreshness", "The enrollment freshness must be 1 to 1440 minutes.")
        }
    }
}

/// Who may create an account, and how (docs/spec.md sections 1 and 2).
public enum RegistrationPosture: String, Codable, Hashable, Sendable, CaseIterable {
    /// An unknown email asking for a code gets a registration code (the default when none was chosen).
    case jitOnOtp = "JitOnOtp"
    /// No self-registration.
    case off = "Off"
    /// Only through POST /api/account/native/register.
    case explicitEndpoint = "ExplicitEndpoint"
}

/// Whether a registration field is asked for.
public enum FieldRequirement: String, Codable, Hashable, Sendable, CaseIterable {
    case off = "Off"
    case optional = "Optional"
    case required = "Required"
}

/// The registration form (Email is always required).
public struct RegistrationFields: Codable, Hashable, Sendable {
    public var username: FieldRequirement
    public var firstname: FieldRequirement
    public var lastname: FieldRequirement

    /// The guide's default (seed 001, "Required identity fields"): "the username is the email
    /// and names are optional", persisted on registration and ignored on login (issue 65; they
    /// were `Off` before, and realms recorded then keep the values they recorded).
    public init(username: FieldRequirement = .off, firstname: FieldRequirement = .optional, lastname: FieldRequirement = .optional) {
        self.username = username
        self.firstname = firstname
        self.lastname = lastname
    }

    /// Sets a field by its wire name (`Username`, `Firstname`, `Lastname`); false for any other
    /// name (`Email` is always required and not settable).
    public mutating func set(_ field: String, to requirement: FieldRequirement) -> Bool {
        switch field {
        case "Username": username = requirement
        case "Firstname": firstname = requirement
        case "Lastname": lastname = requirement
        default: return false
        }
        return true
    }
}

/// One rate limit: `limit` requests per `windowSeconds`, with a burst allowance; optionally
/// log-only (counts and records would-be rejections, rejects nothing) and with an allowlist of
/// source ranges that are never limited.
public struct RateLimitSetting: Codable, Hashable, Sendable {
    public var limit: Int
    public var windowSeconds: Int
    public var burst: Int
    /// true: record what would be rejected, reject nothing (absent in older settings: false).
    public var logOnly: Bool?
    /// Source ranges (CIDR) this policy never limits.
    public var allowlist: [String]?

    public init(limit: Int, windowSeconds: Int, burst: Int, logOnly: Bool? = nil, allowlist: [String]? = nil) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.burst = burst
        self.logOnly = logOnly
        self.allowlist = allowlist
    }

    /// Whether a source key falls in the allowlist.
    public func allows(sourceKey: String) -> Bool {
        (allowlist ?? []).contains { SourceCIDR($0)?.contains(sourceKey: sourceKey) == true }
    }
}
