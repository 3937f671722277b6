import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ

/// The signing keys of each realm: rotation (event with the public key, sealed private key in
/// the same transaction), signing with the active key, and the JWKS with every key.
public actor SigningKeyRing {
    private struct Loaded: Sendable {
        var collection: JWTKeyCollection
        var activeKid: String
    }

    private let pool: PQPool
    private let sealer: KeySealer?
    private let realms: AggregateRegistry<Realm>
    /// Each realm's private keys and active kid: dropped on rotation here, by the settings
    /// listener when another instance rotates (issue 40: a key rotated because it is suspect
    /// stops signing everywhere before the rotation is answered), and after the settings
    /// caches' age limit.
    private nonisolated let cache = SettingsCache<String, Loaded>(maxAge: SettingsChangeListener.confirmationBound)
    /// Each realm's JWKS document as served: dropped on rotation here, and by the settings
    /// listener when another instance rotates (a rotation notifies `realm <id>`).
    private nonisolated let published = SettingsCache<String, String>(maxAge: .seconds(5))

    /// - Parameter sealer: nil for tools that never sign (admin commands): signing and rotation then fail clearly.
    public init(pool: PQPool, sealer: KeySealer?, realms: AggregateRegistry<Realm>) {
        self.pool = pool
        self.sealer = sealer
        self.realms = realms
    }

    /// Creates a new active key; earlier keys stay published for verification.
    @discardableResult
    public func rotate(realm: String, algorithm: SigningKeyMaterial.Algorithm = .es256, now: Date, metadata: EventMetadata) async throws
        -> String
    {
        guard let sealer else { throw SigningKeyRingError.noMasterKey }
        let key = try SigningKeyMaterial.generate(algorithm)
        let sealed = try sealer.seal(key.privateBytes, realm: realm, kid: key.kid)
        let actor = await realms.actor(for: StreamNames.realm(realm))
        _ = try await actor.execute(
            .rotateSigningKey(kid: key.kid, algorithm: algorithm.rawValue, publicJWK: try key.publicJWK()), now: now, metadata: metadata,
            extra: { _ in
                [RealmTables.storeSecret(realm: realm, kid: key.kid, sealed: sealed)]
            })
        cache.invalidate(realm)
        published.invalidate(realm)
        await SettingsChangeListener.announce(.realm(realm), pool: pool)
        return key.kid
    }

    /// Whether keys can be made here (the master key is configured).
    public nonisolated var canRotate: Bool { sealer != nil }

    /// Retires a rotated-out key (`Realm.Command.retireSigningKey`): it leaves the JWKS and its
    /// sealed private key is deleted in the same transaction. Every instance drops it before
    /// this returns (the settings announcement), so tokens it signed stop verifying.
    /// - Returns: false when it was retired already.
    @discardableResult
    public func retire(realm: String, kid: String, force: Bool, now: Date, metadata: EventMetadata) async throws -> Bool {
        let actor = await realms.actor(for: StreamNames.realm(realm))
        let outcome = try await actor.execute(
            .retireSigningKey(kid: kid, force: force), now: now, metadata: metadata,
            extra: { events in events.isEmpty ? [] : [RealmTables.destroySecret(realm: realm, kid: kid)] })
        cache.invalidate(realm)
        published.invalidate(realm)
        await SettingsChangeListener.announce(.realm(realm), pool: pool)
        return !outcome.events.isEmpty
    }

    /// Signs a payload with the realm's active key.
    /// - Throws: `SigningKeyRingError.noKey` when the realm has none yet.
    public func sign(_ payload: some JWTPayload, realm: String) async throws -> String {
        let loaded = try await load(realm)
        return try await loaded.collection.sign(payload, kid: JWKIdentifier(string: loaded.activeKid))
    }

    /// Signs a Security Event Token with the realm's active key, explicitly typed
    /// `secevent+jwt` (RFC 8417 section 2.3; SSF 1.0 section 4.1.1).
    public func signSecurityEvent(_ payload: some JWTPayload, realm: String) async throws -> String {
        try await sign(payload, realm: realm, type: "secevent+jwt")
    }

    /// Signs a payload with the realm's active key under an explicit `typ` (RFC 8725 section
    /// 3.11), so that it cannot be taken for another kind of token.
    public func sign(_ payload: some JWTPayload, realm: String, type: String) async throws -> String {
        let loaded = try await load(realm)
        var header = JWTHeader()
        header.typ = type
        return try await loaded.collection.sign(payload, kid: JWKIdentifier(string: loaded.activeKid), header: header)
    }

    /// The payload of a JWT one of the realm's keys signed, or nil (a bad signature, an unknown
    /// key, a malformed token). The caller checks `typ` and the claims.
    public func verified<Payload: JWTPayload>(_ token: String, as type: Payload.Type, realm: String) async -> Payload? {
        guard let loaded = try? await load(realm) else { return nil }
        return try? await loaded.collection.verify(token, as: type)
    }

    /// Throws `SigningKeyRingError.noKey` (or `.noMasterKey`) unless the realm can sign now.
    /// Nonisolated: on the refresh path it is a cache hit, with no hop onto the actor.
    public nonisolated func requireKey(realm: String) async throws {
        guard let sealer else { throw SigningKeyRingError.noMasterKey }
        _ = try await cache.value(for: realm) { @Sendable in try await self.read(realm, sealer: sealer) }
    }

    /// The `jti` of a JWT whose signature one of the realm's keys verifies (RFC 7515 section
    /// 5.2), or nil: what an access token minted before tokens were recorded by their whole
    /// hash is found by (`TokenService.liveAccessToken`).
    public func verifiedJTI(of token: String, realm: String) async -> String? {
        guard let loaded = try? await load(realm), let claims = try? await loaded.collection.verify(token, as: SignedJTI.self) else { return nil }
        return claims.jti
    }

    /// The realm's JWKS document: every key it ever signed with (RFC 7517 section 5).
    public nonisolated func jwks(realm: String) async throws -> String {
        try await published.value(for: realm) {
            let keys = try await RealmTables.publicJWKs(realm: realm, pool: pool)
            return #"{"keys":["# + keys.joined(separator: ",") + "]}"
        }
    }

    /// Drops a realm's keys, private and published (`nil`: every realm's), after a change
    /// another instance announced.
    public nonisolated func invalidatePublished(realm: String?) {
        if let realm {
            published.invalidate(realm)
            cache.invalidate(realm)
        } else {
            published.invalidateAll()
            cache.invalidateAll()
        }
    }

    private func load(_ realm: String) async throws -> Loaded {
        guard let sealer else { throw SigningKeyRingError.noMasterKey }
        return try await cache.value(for: realm) { @Sendable in try await self.read(realm, sealer: sealer) }
    }

    private nonisolated func read(_ realm: String, sealer: KeySealer) async throws -> Loaded {
        let rows = try await RealmTables.sealedKeys(realm: realm, pool: pool)
        // The realm's own history says which key is newest (timestamps can tie).
        guard !rows.isEmpty, let active = try await realms.actor(for: StreamNames.realm(realm)).current().state.activeKey?.kid else {
            throw SigningKeyRingError.noKey(realm: realm)
        }
        let collection = JWTKeyCollection()
        for row in rows {
            let kid = row.kid
            guard let algorithm = SigningKeyMaterial.Algorithm(rawValue: row.algorithm) else { continue }
            let privateBytes = try sealer.open(row.sealed, realm: realm, kid: kid)
            try await SigningKeyMaterial(kid: kid, algorithm: algorithm, privateBytes: privateBytes).add(to: collection)
        }
        return Loaded(collection: collection, activeKid: active)
    }
}

public enum SigningKeyRingError: Error, Equatable, CustomStringConvertible {
    case noKey(realm: String)
    case noMasterKey

    public var description: String {
        switch self {
        case .noKey(let realm): return "realm \(realm) has no signing key yet (modgud realm rotate-key)"
        case .noMasterKey: return "no master key configured (MODGUD_MASTER_KEY): signing keys cannot be used"
        }
    }
}

/// Only a token's `jti`: the signature is what `SigningKeyRing.verifiedJTI` checks; expiry is
/// the access-token record's.
private struct SignedJTI: JWTPayload {
    var jti: String
    func verify(using algorithm: some JWTAlgorithm) throws {}
}
