import ModgudDomain

/// The grants the token endpoint serves, by `grant_type` (docs/architecture.md, "House habits": when a switch grows, a
/// registry, as `AttestationFormatRegistry` is for attestation formats). Metrics label their
/// counts by it and discovery lists from it.
struct GrantRegistry: Sendable {
    private let grants: [String: any TokenGrant]
    /// Discovery's two possible lists, computed once (discovery is served at tens of thousands per second).
    private let advertisedPlain: [String]
    private let advertisedWithNative: [String]

    init(_ grants: [any TokenGrant]) {
        let byName = Dictionary(grants.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.grants = byName
        advertisedPlain = Self.advertised(byName, nativeGrantsEnabled: false)
        advertisedWithNative = Self.advertised(byName, nativeGrantsEnabled: true)
    }

    /// Every grant Modgud serves.
    static let standard = GrantRegistry([
        RefreshTokenGrant(), ClientCredentialsGrant(), OneTimeCodeGrant(), MagicLinkGrant(), PasskeyGrant(), Auth0WebAuthnGrant(),
        Auth0PasswordlessOTPGrant(), AuthorizationCodeGrant(), RecoveryCodeGrant(), TokenExchangeGrant(),
        DeviceCodeGrant(),
    ])

    /// The grant a `grant_type` names; nil for one not served.
    func grant(named name: String) -> (any TokenGrant)? {
        grants[name]
    }

    /// The `grant_type` values discovery lists for a realm: the native ones only while the
    /// realm has native grants on. Sorted: the plain OAuth grants, then the native ones.
    func advertised(nativeGrantsEnabled: Bool) -> [String] {
        nativeGrantsEnabled ? advertisedWithNative : advertisedPlain
    }

    private static func advertised(_ grants: [String: any TokenGrant], nativeGrantsEnabled: Bool) -> [String] {
        let names = grants.values.filter { !$0.isNative || nativeGrantsEnabled }.map(\.name)
        let plain = names.filter { grants[$0]?.isNative == false }
        let native = names.filter { grants[$0]?.isNative == true }
        return Self.plainOrder(plain) + native.sorted()
    }

    /// `refresh_token` first, then `client_credentials` (the order discovery always had).
    private static func plainOrder(_ names: [String]) -> [String] {
        names.sorted { lhs, rhs in
            let order = [GrantType.refreshToken.rawValue, GrantType.clientCredentials.rawValue]
            return (order.firstIndex(of: lhs) ?? order.count, lhs) < (order.firstIndex(of: rhs) ?? order.count, rhs)
        }
    }

    /// Whether a `grant_type` is served (bounded metric labels: anything else counts as `other`).
    func serves(_ name: String) -> Bool {
        grants[name] != nil
    }
}
