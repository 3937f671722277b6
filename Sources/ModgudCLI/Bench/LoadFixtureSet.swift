import EventSourcing
import Foundation
import ModgudClient
import ModgudDomain
import ModgudService
import WebAuthn
import WebAuthnTesting

/// The realm, clients and sign-in material of `modgud bench load`, written straight through
/// the service layer (no mail, no HTTP) into the server's database.
struct LoadFixtureSet: Sendable {
    static let realmID = "bench"
    static let host = "bench.load.test"
    static let origin = "https://bench.load.test"
    static let appClient = "bench-app"
    static let serviceClient = "bench-service"
    /// A public client whose requests carry a client attestation (issue 47; `allowed`, so that
    /// the realm's requests that name no client stay as they are).
    static let attestedClient = "bench-attested"
    static let issuer = "https://\(host)"

    let admin: Administration
    let clients: ClientAuthenticator
    let tokens: TokenService
    let realms: RealmDirectory
    let passkeyService: PasskeyService
    let fixtures: LoadFixtures
    /// Sessions aged by many rotations (`bench scale`).
    let history: SessionHistory
    let keys: SigningKeyRing
    let metadata = EventMetadata(actor: "system:bench")
    /// The service client's secret (set up by `prepareRealm`).
    var serviceSecret = ""

    /// Creates the realm (every rate limit lifted out of the way, still counted unless its
    /// source is in `allowlist`, which applies to `policies`, nil: all), its signing key and
    /// the two clients; on a database that has them already, lifts the limits again and
    /// rotates the service client's secret.
    mutating func prepareRealm(allowlist: [String] = [], policies: Set<String>? = nil) async throws {
        var lifted: [String: RateLimitSetting] = [:]
        for policy in RateLimitPolicy.all {
            let allowed = allowlist.isEmpty || !(policies?.contains(policy.name) ?? true) ? nil : allowlist
            lifted[policy.name] = RateLimitSetting(limit: 1_000_000_000, windowSeconds: 1, burst: 1_000_000_000, allowlist: allowed)
        }
        let settings = RealmSettings(
            hosts: [Self.host], displayName: "Modgud bench", primaryDomain: Self.host, nativeGrants: NativeGrantSettings(enabled: true),
            registrationPosture: .jitOnOtp, magicLinkEnabled: true, rateLimitOverrides: lifted)
        if try await admin.realms.get(Self.realmID).exists {
            _ = try await admin.realms.update(Self.realmID, metadata: metadata) { $0 = settings }
        } else {
            _ = try await admin.realms.create(Self.realmID, settings: settings, metadata: metadata)
        }
        if try await admin.realms.get(Self.realmID).activeKey == nil {
            _ = try await admin.realms.rotateSigningKey(realm: Self.realmID, algorithm: .es256, metadata: metadata)
        }
        let app = try await admin.clients.get(realm: Self.realmID, id: Self.appClient)
        if !app.exists {
            _ = try await admin.clients.create(
                realm: Self.realmID, id: Self.appClient,
                settings: ClientSettings(
                    type: .public, displayName: "Bench app", grants: [.otp, .magic, .passkey, .refreshToken],
                    allowedScopes: ["openid", "email", "profile", "offline_access"], rpID: Self.host, passkeySignUp: true),
                metadata: metadata)
        } else if app.settings?.passkeySignUp == false {
            _ = try await admin.clients.update(realm: Self.realmID, id: Self.appClient, metadata: metadata) { $0.passkeySignUp = true }
        }
        if try await !admin.clients.get(realm: Self.realmID, id: Self.attestedClient).exists {
            var settings = ClientSettings(
                type: .public, displayName: "Bench attested app", grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"])
            settings.clientAttestation = .allowed
            _ = try await admin.clients.create(realm: Self.realmID, id: Self.attestedClient, settings: settings, metadata: metadata)
        }
        if try await !admin.clients.get(realm: Self.realmID, id: Self.serviceClient).exists {
            _ = try await admin.clients.create(
                realm: Self.realmID, id: Self.serviceClient,
                settings: ClientSettings(type: .confidential, displayName: "Bench service", grants: [.clientCredentials], allowedScopes: ["api"]),
                metadata: metadata)
        }
        serviceSecret = try await admin.clients.rotateSecret(realm: Self.realmID, id: Self.serviceClient, metadata: metadata)
    }

    /// A confirmed user with a fresh random address.
    func user(_ label: String) async throws -> (id: UUID, email: EmailAddress) {
        let email = EmailAddress("\(label)-\(UUID().uuidString.lowercased())@bench.load.test")!
        return (try await admin.users.create(realm: Self.realmID, email: email.value, metadata: metadata).id, email)
    }

    /// Signed-in sessions of the app client: one refresh token each, and with `dpop` the
    /// key each session is bound to.
    func refreshTokens(_ count: Int, dpop: Bool = false, clientID: String = appClient) async throws -> [(token: String, key: SoftwareDPoPKey?)] {
        let client = try await clients.authenticate(realm: Self.realmID, clientID: clientID, secret: nil)
        return try await Self.concurrently(count) { _ in
            let (id, _) = try await user("refresh")
            let state = try await admin.users.state(realm: Self.realmID, id: id)
            let key = dpop ? SoftwareDPoPKey() : nil
            let tokens = try await tokens.signIn(
                client: client, user: state, grantType: .otp, scope: "openid offline_access", resources: [], amr: ["otp"],
                issuer: "https://\(Self.host)", dpopKey: key?.thumbprint, metadata: metadata)
            return (tokens.refreshToken!, key)
        }
    }

    /// A Client Attestation JWT for the attested client and its instance key, as the attester
    /// issues it (signed with the realm's key; the attester's own cost is once an hour per
    /// instance, not per request).
    func clientAttestation() async throws -> (String, SoftwareDPoPKey) {
        let key = SoftwareDPoPKey()
        let jwk = key.publicJWK
        let now = Date()
        let claims = ClientAttestationClaims(
            iss: Self.issuer, sub: Self.attestedClient, iat: .init(value: now), exp: .init(value: now.addingTimeInterval(3600)),
            cnf: .init(jwk: .init(kty: "EC", crv: "P-256", x: jwk["x"] ?? "", y: jwk["y"])), platform: "apple-app-attest", app: "BENCH12345.bench.app")
        return (try await keys.sign(claims, realm: Self.realmID, type: ClientAttestationClaims.type), key)
    }

    /// An access token of the app client (for introspection).
    func accessToken() async throws -> String {
        let client = try await clients.authenticate(realm: Self.realmID, clientID: Self.appClient, secret: nil)
        let (id, _) = try await user("introspect")
        let state = try await admin.users.state(realm: Self.realmID, id: id)
        return try await tokens.signIn(
            client: client, user: state, grantType: .otp, scope: "openid", resources: [], amr: ["otp"], issuer: "https://\(Self.host)",
            metadata: metadata
        ).accessToken
    }

    /// Registration codes for addresses that have no account yet (each redeem signs a user up).
    func registrationCodes(_ count: Int) async throws -> [(email: String, code: String)] {
        return try await Self.concurrently(count) { _ in
            let email = EmailAddress("otp-\(UUID().uuidString.lowercased())@bench.load.test")!
            return (email.value, try await fixtures.registrationCode(email: email, realm: Self.realmID, metadata: metadata))
        }
    }

    /// Magic links of existing users, one user each.
    func magicLinks(_ count: Int) async throws -> [(userID: String, token: String)] {
        return try await Self.concurrently(count) { _ in
            let (id, _) = try await user("magic")
            return (id.uuidString.lowercased(), try await fixtures.magicLink(userID: id, realm: Self.realmID, metadata: metadata))
        }
    }

    /// Users with one enrolled passkey each (the software authenticator holds the keys).
    func passkeys(_ count: Int) async throws -> [SoftwareCredential] {
        guard let realm = try await realms.realm(forHost: Self.host) else { throw CommandError("the bench realm is missing") }
        return try await Self.concurrently(count) { _ in
            let (id, _) = try await user("passkey")
            let begun = try await passkeyService.beginEnrollment(realm: realm, userID: id, clientID: Self.appClient, metadata: metadata)
            guard case .creation(let challenge, _, _, let handle, _, _, _, _) = begun.options, let userHandle = Base64URL.decode(handle) else {
                throw CommandError("unexpected enrollment options")
            }
            let credential = SoftwareCredential(rpID: Self.host, userHandle: userHandle)
            let attestation = SoftwareAuthenticator().register(credential, .init(challenge: challenge, origin: Self.origin))
            _ = try await passkeyService.completeEnrollment(
                realm: realm, userID: id, clientID: Self.appClient, ceremonyID: begun.ceremonyID.uuidString, attestation: attestation.json,
                displayName: "bench", metadata: metadata)
            return credential
        }
    }

    /// Runs `body` for 0..<count, 16 at a time, and returns the results in order.
    static func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> T) async throws -> [T] {
        try await withThrowingTaskGroup(of: (Int, T).self) { group in
            var results: [T?] = Array(repeating: nil, count: count)
            var started = 0
            while started < min(count, 16) {
                let index = started
                group.addTask { (index, try await body(index)) }
                started += 1
            }
            while let (index, value) = try await group.next() {
                results[index] = value
                if started < count {
                    let next = started
                    group.addTask { (next, try await body(next)) }
                    started += 1
                }
            }
            return results.map { $0! }
        }
    }
}
