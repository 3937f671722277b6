import Crypto
import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// A client that passed authentication (or, if public, identified itself).
public struct AuthenticatedClient: Sendable, Equatable {
    public var realm: String
    public var id: String
    public var settings: ClientSettings
    /// The secret hash the client was authenticated against (nil: a public client), so that a
    /// grant that reads the client from the store can tell a secret rotated meanwhile.
    public var secretHash: String? = nil
    /// The attested app instance the request came from (issue 47: attestation-based client
    /// authentication), nil when unattested. Tokens minted for the request state it.
    public var attestation: ClientAttestationFact? = nil

    /// The request as the redeemer of a flow (issue 65: `FlowBinding.admits`): this client, its
    /// attested instance, and whether the client requires attestation.
    public var presenter: FlowBinding.Presenter {
        FlowBinding.Presenter(clientID: id, attestedKey: attestation?.jkt, attestationRequired: settings.clientAttestation == .required)
    }
}

/// Client authentication for the token, introspection and revocation endpoints: none for
/// public clients, `client_secret_basic` or `client_secret_post` for confidential ones
/// (RFC 6749 section 2.3.1). Secrets are 256-bit random values stored as SHA-256.
public struct ClientAuthenticator: Sendable {
    let pool: PQPool
    /// The client directory row, held per instance (`SettingsCache`: dropped on change).
    struct Row: Sendable {
        var settings: ClientSettings
        var secretHash: String?
        var enabled: Bool
    }

    struct Key: Hashable, Sendable {
        var realm: String
        var clientID: String
    }

    private let cache: SettingsCache<Key, Row?>

    public init(pool: PQPool, maxAge: Duration = .seconds(5)) {
        self.pool = pool
        self.cache = SettingsCache(maxAge: maxAge)
    }

    /// Drops one client, or every client.
    public func invalidate(realm: String, clientID: String?) {
        if let clientID {
            cache.invalidate(Key(realm: realm, clientID: clientID))
        } else {
            cache.invalidateAll()
        }
    }

    private func row(realm: String, clientID: String) async throws -> Row? {
        try await cache.value(for: Key(realm: realm, clientID: clientID)) {
            guard let row = try await ClientsTable.client(realm: realm, clientID: clientID, pool: pool) else { return nil }
            return Row(settings: row.settings, secretHash: row.secretHash, enabled: row.enabled)
        }
    }

    /// A fresh client secret and its stored hash.
    public static func generateSecret() -> (secret: String, hash: String) {
        let (token, hash) = OpaqueToken.generate()
        return (token, hash)
    }

    /// Authenticates `clientID` with `secret` (nil: none presented).
    /// - Throws: `invalid_client` (401 when a secret was presented or the client is
    ///   confidential), `invalid_grant` "The OAuth client is disabled.".
    public func authenticate(realm: String, clientID: String, secret: String?) async throws -> AuthenticatedClient {
        let row = try await row(realm: realm, clientID: clientID)
        // Hash even when the client is unknown, so timing does not tell unknown from wrong.
        let presentedHash = secret.map(OpaqueToken.hash) ?? OpaqueToken.hash("")
        guard let row else { throw OAuthError.invalidClient(attempted: secret != nil) }
        let settings = row.settings
        let storedHash = row.secretHash
        switch settings.type {
        case .confidential:
            guard secret != nil, let storedHash, ConstantTime.equal(presentedHash, storedHash) else {
                throw OAuthError.invalidClient(attempted: true)
            }
        case .public:
            guard secret == nil else { throw OAuthError.invalidClient(attempted: true) }
        }
        guard row.enabled else { throw OAuthError.invalidGrant("The OAuth client is disabled.") }
        return AuthenticatedClient(realm: realm, id: clientID, settings: settings, secretHash: settings.type == .confidential ? storedHash : nil)
    }

    /// An enabled client's settings without authentication (anonymous endpoints that only
    /// need its RP-ID), or nil.
    public func enabledClient(realm: String, clientID: String) async throws -> ClientSettings? {
        guard let row = try await row(realm: realm, clientID: clientID), row.enabled else { return nil }
        return row.settings
    }
}
