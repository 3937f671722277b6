import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// The device authorization grant (RFC 8628, issue 69): a device without a browser (a TV, a
/// CLI) asks for a device code and a user code (section 3.1), shows the user code, and polls
/// the token endpoint (section 3.4) while the person approves it on a phone, in a signed-in app
/// or on the realm's web page, with a user-verified passkey assertion
/// (`DeviceAuthorizationService+Approval.swift`). The device authorization aggregate decides
/// approval and redemption; `device_authorizations` finds typed user codes and paces polls.
public struct DeviceAuthorizationService: Sendable {
    let pool: PQPool
    let authorizations: AggregateRegistry<DeviceAuthorization>
    let tokens: TokenService
    let users: AggregateRegistry<User>
    let passkeys: PasskeyService
    let userCodeKey: SymmetricKey
    let now: @Sendable () -> Date

    public init(
        pool: PQPool, authorizations: AggregateRegistry<DeviceAuthorization>, tokens: TokenService, users: AggregateRegistry<User>, passkeys: PasskeyService, userCodeKey: SymmetricKey,
        now: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.authorizations = authorizations
        self.tokens = tokens
        self.users = users
        self.passkeys = passkeys
        self.userCodeKey = userCodeKey
        self.now = now
    }

    /// Everything after the approval (issue 68): a passkey approved it, no second factor is asked.
    var pipeline: SignInPipeline {
        SignInPipeline(tokens: tokens, secondFactor: nil)
    }

    /// What the device says it is and where it asked from, shown to the person approving (the
    /// cross-device BCP's "did you start this?"). Kept only in the authorization's row.
    public struct Device: Sendable, Equatable {
        /// `device_name` (Modgud's extension of section 3.1), at most 100 characters.
        public var name: String?
        /// The request's network, coarsened: an IPv4 /24 or an IPv6 /48.
        public var network: String?

        public init(name: String?, network: String?) {
            self.name = name.flatMap(Self.clean)
            self.network = network
        }

        static func clean(_ name: String) -> String? {
            let kept = String(name.filter { !$0.isNewline && !($0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } ?? false) }.prefix(100))
                .trimmingCharacters(in: .whitespaces)
            return kept.isEmpty ? nil : kept
        }
    }

    /// Section 3.2's answer, less the URIs (the HTTP layer knows the realm's host).
    public struct Issued: Sendable {
        /// `<authorization id>~<secret>`: the id finds the stream, the secret's hash must match.
        public var deviceCode: String
        public var userCode: UserCode
        public var expiresIn: Int
        public var interval: Int
    }

    /// Section 3.1: a new device authorization for `client`, with the scopes and resources it
    /// may have. The client must hold the device code grant.
    public func request(client: AuthenticatedClient, scope: String?, resources: [String], device: Device, metadata: EventMetadata) async throws
        -> Issued
    {
        guard client.settings.grants.contains(.deviceCode) else {
            throw OAuthError.unauthorizedClient("The client may not use grant_type \(GrantType.deviceCode.rawValue).")
        }
        let scopes = try ScopePolicy.grantedScopes(requested: scope, client: client.settings)
        _ = try ScopePolicy.audiences(resources: resources, client: client.settings, clientID: client.id)
        // Two live codes colliding is a 2^-34 event per pair; draw again when it happens.
        for _ in 0..<4 {
            let userCode = Self.drawUserCode()
            let (secret, secretHash) = OpaqueToken.generate()
            let time = now()
            let requested = DeviceAuthorizationRequested(
                authorizationID: UUID(), clientID: client.id, scopes: scopes, resources: Array(Set(resources)).sorted(), deviceSecretHash: secretHash,
                userCodeHash: userCodeHash(userCode), expiresAt: time + DeviceAuthorization.lifetime, interval: DeviceAuthorization.interval)
            let stream = StreamNames.deviceAuthorization(realm: client.realm, authorizationID: requested.authorizationID)
            let row = DeviceAuthorizationsTable.insert(requested, realm: client.realm, device: device, now: time)
            do {
                _ = try await authorizations.actor(forNew: stream).execute(.request(requested), now: time, metadata: metadata, extra: { _ in [row] })
            } catch where DeviceAuthorizationsTable.isUserCodeTaken(error) {
                continue
            }
            return Issued(
                deviceCode: requested.authorizationID.uuidString.lowercased() + "~" + secret, userCode: userCode,
                expiresIn: Int(DeviceAuthorization.lifetime), interval: requested.interval)
        }
        throw OAuthError("temporarily_unavailable", "No free user code was drawn: try again.")
    }

    /// The keyed hash a user code is stored and found by.
    func userCodeHash(_ code: UserCode) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Array(code.characters.utf8), using: userCodeKey)))
    }

    static func drawUserCode() -> UserCode {
        while true {
            if let code = UserCode(randomBytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }) { return code }
        }
    }

    /// The authorization a device code names: its id and its secret's hash; nil when it has not
    /// that shape.
    static func parse(deviceCode: String) -> (id: UUID, secretHash: String)? {
        let parts = deviceCode.split(separator: "~", maxSplits: 1)
        guard parts.count == 2, let id = UUID(uuidString: String(parts[0])), !parts[1].isEmpty else { return nil }
        return (id, OpaqueToken.hash(String(parts[1])))
    }
}
