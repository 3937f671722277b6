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
