/// The grant types a client may hold (docs/spec.md sections 0 and 1).
public enum GrantType: String, Codable, Hashable, Sendable, CaseIterable, Comparable {
    case otp = "urn:cocoar:otp"
    case magic = "urn:cocoar:magic"
    case passkey = "urn:cocoar:passkey"
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"
    /// A recovery code (issue 46): a session that can only enroll a passkey and manage sessions.
    case recoveryCode = "urn:modgud:recovery-code"
    /// RFC 8693 token exchange of a provider's ID token (issue 48: Sign in with Apple and Google).
    case tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// RFC 8628 section 3.4: a device without a browser polls with its device code while the
    /// person approves it on a phone (issue 69).
    case deviceCode = "urn:ietf:params:oauth:grant-type:device_code"

    /// The three native passwordless grants.
    public static let native: Set<GrantType> = [.otp, .magic, .passkey]

    /// Whether the grant signs a user in (as opposed to a service).
    public var isUserGrant: Bool { self != .clientCredentials }

    public static func < (lhs: GrantType, rhs: GrantType) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Public clients cannot keep a secret; confidential ones authenticate with one.
public enum ClientType: String, Codable, Hashable, Sendable {
    case `public` = "public"
    case confidential = "confidential"
}

/// How a client's access tokens look (docs/architecture.md, "Tokens").
public enum AccessTokenFormat: String, Codable, Hashable, Sendable {
    /// Opaque, 256-bit random, stored hashed, revocable at once; resource servers introspect.
    case reference
    /// A signed JWT resource servers verify with the JWKS.
    case jwt
}

/// Whether a client's tokens are bound to DPoP keys (RFC 9449).
public enum DPoPPolicy: String, Codable, Hashable, Sendable, CaseIterable {
    /// DPoP headers are ignored: bearer tokens only.
    case off
    /// A grant with a DPoP proof is bound; one without is bearer (the default).
    case allowed
    /// Every token request needs a DPoP proof.
    case required
}

/// What an administrator sets on a client.
public struct ClientSettings: Codable, Hashable, Sendable {
    public var type: ClientType
    public var displayName: String
    public var grants: Set<GrantType>
    public var allowedScopes: Set<String>
    /// Audiences (RFC 8707 resources) tokens may be narrowed to, besides the client itself.
    public var audiences: Set<String>
    /// WebAuthn RP-ID for passkeys; nil falls back to the realm's primary domain.
    public var rpID: String?
    /// Android app origins (`android:apk-key-hash:…`) accepted per RP-ID.
    public var androidOrigins: Set<String>
    public var accessTokenFormat: AccessTokenFormat
    /// Whether the app may create accounts with a passkey (issue 14); needs the passkey grant.
    public var passkeySignUp: Bool
    /// The iOS apps (`TEAMID.bundle.id`) that hold passkeys for the client's RP-ID (issue 15):
    /// the `webcredentials.apps` of its apple-app-site-association file.
    public var appleAppIDs: Set<String>
    /// The Android apps that hold passkeys for the client's RP-ID (issue 15): its
    /// assetlinks.json, and the `android:apk-key-hash:` origins derived from the fingerprints.
    public var androidApps: [AndroidApp]
    /// DPoP at the token endpoint (issue 29).
    public var dpop: DPoPPolicy = .allowed
    /// Every DPoP proof of the client's must carry a server nonce (RFC 9449 section 8), not
    /// only those whose `iat` is off: a proof can then not be made ahead of time.
    public var dpopNonce = false
    /// The audience of a token asked for without `audience` or `resource` (issue 41; Auth0's
    /// default audience). nil: the client itself. One of `audiences`.
    public var defaultAudience: String?
    /// The audiences a refresh may switch to, each with the scopes it may carry there (Auth0's
    /// multi-resource refresh token policies). Without one, a refresh only narrows.
    public var refreshTokenPolicies: [RefreshTokenPolicy] = []
    /// Attestation-based client authentication (issue 47).
    public var clientAttestation: ClientAttestationMode = .off
    /// The App Attest environments whose keys the client's attester accepts (issue 47).
    public var appAttestEnvironments: AppAttestEnvironments = .production
    /// The iOS app's custom URL scheme (issue 65, item 6): `/magic-login` hands a magic link to
    /// the app as `<scheme>://magic-login?userId=…&token=…` (Apple, "Defining a custom URL
    /// scheme for your app"), since a same-domain universal link stays in Safari. nil: none.
    public var appURLScheme: String?

    public init(
        type: ClientType, displayName: String = "", grants: Set<GrantType>, allowedScopes: Set<String>, audiences: Set<String> = [],
        rpID: String? = nil, androidOrigins: Set<String> = [], accessTokenFormat: AccessTokenFormat = .reference, passkeySignUp: Bool = false,
        appleAppIDs: Set<String> = [], androidApps: [AndroidApp] = []
    ) {
        self.type = type
        self.displayName = displayName
        self.grants = grants
        self.allowedScopes = allowedScopes
        self.audiences = audiences
        self.rpID = rpID
        self.androidOrigins = androidOrigins
        self.accessTokenFormat = accessTokenFormat
        self.passkeySignUp = passkeySignUp
        self.appleAppIDs = appleAppIDs
        self.androidApps = androidApps
    }

    /// The Android origins passkey ceremonies accept: the manual list and one per signing
    /// certificate of the client's Android apps.
    public var acceptedAndroidOrigins: Set<String> {
        androidOrigins.union(androidApps.flatMap { $0.sha256Fingerprints.compactMap(AndroidApp.origin(fingerprint:)) })
    }

    private enum CodingKeys: String, CodingKey {
        case type, displayName, grants, allowedScopes, audiences, rpID, androidOrigins, accessTokenFormat, passkeySignUp, appleAppIDs, androidApps,
            dpop, dpopNonce, defaultAudience, refreshTokenPolicies, clientAttestation, appAttestEnvironments, appURLScheme
    }

    /// Settings recorded before a member existed decode with its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(ClientType.self, forKey: .type)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName) ?? ""
        grants = try container.decode(Set<GrantType>.self, forKey: .grants)
        allowedScopes = try container.decode(Set<String>.self, forKey: .allowedScopes)
        audiences = try container.decodeIfPresent(Set<String>.self, forKey: .audiences) ?? []
        rpID = try container.decodeIfPresent(String.self, forKey: .rpID)
        androidOrigins = try container.decodeIfPresent(Set<String>.self, forKey: .androidOrigins) ?? []
        accessTokenFormat = try container.decodeIfPresent(AccessTokenFormat.self, forKey: .accessTokenFormat) ?? .reference
        passkeySignUp = try container.decodeIfPresent(Bool.self, forKey: .passkeySignUp) ?? false
        appleAppIDs = try container.decodeIfPresent(Set<String>.self, forKey: .appleAppIDs) ?? []
        androidApps = try container.decodeIfPresent([AndroidApp].self, forKey: .androidApps) ?? []
        dpop = try container.decodeIfPresent(DPoPPolicy.self, forKey: .dpop) ?? .allowed
        dpopNonce = try container.decodeIfPresent(Bool.self, forKey: .dpopNonce) ?? false
        defaultAudience = try container.decodeIfPresent(String.self, forKey: .defaultAudience)
        refreshTokenPolicies = try container.decodeIfPresent([RefreshTokenPolicy].self, forKey: .refreshTokenPolicies) ?? []
        clientAttestation = try container.decodeIfPresent(ClientAttestationMode.self, forKey: .clientAttestation) ?? .off
        appAttestEnvironments = try container.decodeIfPresent(AppAttestEnvironments.self, forKey: .appAttestEnvironments) ?? .production
        appURLScheme = try container.decodeIfPresent(String.self, forKey: .appURLScheme)
    }

    /// Sets are written sorted, so equal settings always encode to equal bytes (events, read
    /// models and rebuilds compare them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(grants.sorted(), forKey: .grants)
        try container.encode(allowedScopes.sorted(), forKey: .allowedScopes)
        try container.encode(audiences.sorted(), forKey: .audiences)
        try container.encodeIfPresent(rpID, forKey: .rpID)
        try container.encode(androidOrigins.sorted(), forKey: .androidOrigins)
        try container.encode(accessTokenFormat, forKey: .accessTokenFormat)
        // Written only when on, so settings that never used it keep their bytes.
        if passkeySignUp { try container.encode(true, forKey: .passkeySignUp) }
        if !appleAppIDs.isEmpty { try container.encode(appleAppIDs.sorted(), forKey: .appleAppIDs) }
        if !androidApps.isEmpty { try container.encode(androidApps, forKey: .androidApps) }
        if dpop != .allowed { try container.encode(dpop, forKey: .dpop) }
        if dpopNonce { try container.encode(true, forKey: .dpopNonce) }
        try container.encodeIfPresent(defaultAudience, forKey: .defaultAudience)
        if !refreshTokenPolicies.isEmpty { try container.encode(refreshTokenPolicies, forKey: .refreshTokenPolicies) }
        if clientAttestation != .off { try container.encode(clientAttestation, forKey: .clientAttestation) }
        if appAttestEnvironments != .production { try container.encode(appAttestEnvironments, forKey: .appAttestEnvironments) }
        try container.encodeIfPresent(appURLScheme, forKey: .appURLScheme)
    }

    /// A refresh policy naming `audience`, if any.
    public func refreshPolicy(for audience: String) -> RefreshTokenPolicy? {
        refreshTokenPolicies.first { $0.audience == audience }
    }

    /// Strict grant separation and the other rules of docs/spec.md sections 0 and 1.
    public func validate() throws(DomainError) {
        guard !grants.isEmpty else { throw DomainError("Client.GrantsRequired", "A client needs at least one grant.") }
        if grants.contains(.clientCredentials) {
            guard grants == [.clientCredentials] else {
                throw DomainError(
                    "Client.MixedGrants", "A client holds either user grants or client_credentials, never both (strict grant separation).")
            }
            guard type == .confidential else {
                throw DomainError("Client.PublicServiceClient", "client_credentials needs a confidential client.")
            }
        }
        if grants == [.refreshToken] {
            throw DomainError("Client.RefreshOnly", "refresh_token needs a grant that signs the user in.")
        }
        for scope in allowedScopes where scope.isEmpty || scope.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" }) {
            throw DomainError("Client.InvalidScope", "Scope '\(scope)' is not a scope token (RFC 6749 section 3.3).")
        }
        if let rpID, !RealmSettings.isValidHost(rpID) {
            throw DomainError("Client.InvalidRpId", "\(rpID) is not a domain name.")
        }
        if passkeySignUp, !grants.contains(.passkey) {
            throw DomainError("Client.SignUpNeedsPasskeyGrant", "Passkey sign-up needs the urn:cocoar:passkey grant.")
        }
        for appID in appleAppIDs where !AndroidApp.isAppleAppID(appID) {
            throw DomainError("Client.InvalidAppleAppId", "\(appID) is not TEAMID.bundle.id (a 10-character team id, a dot, a bundle id).")
        }
        for app in androidApps {
            guard AndroidApp.isPackageName(app.packageName) else {
                throw DomainError("Client.InvalidAndroidPackage", "\(app.packageName) is not an Android package name.")
            }
            guard !app.sha256Fingerprints.isEmpty, app.sha256Fingerprints.allSatisfy({ AndroidApp.fingerprintBytes($0) != nil }) else {
                throw DomainError(
                    "Client.InvalidAndroidFingerprint", "An Android app needs SHA-256 signing-certificate fingerprints (32 bytes, hex, colons optional).")
            }
        }
        if let defaultAudience, !audiences.contains(defaultAudience) {
            throw DomainError("Client.InvalidDefaultAudience", "The default audience \(defaultAudience) must be one of the client's audiences.")
        }
        for policy in refreshTokenPolicies {
            guard audiences.contains(policy.audience) else {
                throw DomainError("Client.InvalidRefreshPolicy", "A refresh policy's audience \(policy.audience) must be one of the client's audiences.")
            }
            guard !policy.scopes.isEmpty, policy.scopes.allSatisfy(allowedScopes.contains) else {
                throw DomainError("Client.InvalidRefreshPolicy", "A refresh policy's scopes must be some of the client's allowed scopes.")
            }
        }
        guard Set(refreshTokenPolicies.map(\.audience)).count == refreshTokenPolicies.count else {
            throw DomainError("Client.InvalidRefreshPolicy", "An audience has one refresh policy at most.")
        }
        for origin in androidOrigins where !origin.hasPrefix("android:apk-key-hash:") || origin.count <= "android:apk-key-hash:".count {
            throw DomainError("Client.InvalidAndroidOrigin", "Android origins look like android:apk-key-hash:<base64url>.")
        }
        if let appURLScheme, !Self.isAppURLScheme(appURLScheme) {
            throw DomainError(
                "Client.InvalidAppUrlScheme",
                "\(appURLScheme) is not an app's URL scheme: a letter, then letters, digits, +, - or . (RFC 3986 section 3.1), at most 64, not http or https.")
        }
    }

    /// A scheme an app may claim: RFC 3986 section 3.1's `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`,
    /// at most 64 characters, and not the web's own (an http(s) link on the page's host is what
    /// stays in the browser).
    public static func isAppURLScheme(_ scheme: String) -> Bool {
        guard let first = scheme.first, first.isASCII, first.isLetter, scheme.count <= 64,
            !["http", "https"].contains(scheme.lowercased())
        else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }
}

/// An audience a refresh may switch to, and the scopes a token for it may carry (Auth0's
/// multi-resource refresh token policy: `refresh_token.policies[]` `{audience, scope}`).
public struct RefreshTokenPolicy: Codable, Hashable, Sendable {
    public var audience: String
    public var scopes: [String]

    public init(audience: String, scopes: [String]) {
        self.audience = audience
        self.scopes = scopes
    }
}
