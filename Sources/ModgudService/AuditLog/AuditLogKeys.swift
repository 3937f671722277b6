import Crypto
import EventStorePostgres
import Foundation
import PQ
import TransparencyLog

/// Each realm's audit log key (issue 28): Ed25519, made on the first checkpoint, its private
/// half sealed under the master key like the token keys (`KeySealer`, kid `audit-log`) and
/// used for nothing but checkpoints. Its name is the log's origin,
/// `audit.modgud/<realm>/<8 hex digits>`, random per deployment so that two deployments'
/// logs of a same-named realm are never confused by a witness.
public actor AuditLogKeys: CheckpointSigning {
    private let pool: PQPool
    private let sealer: KeySealer?
    private var keys: [String: (origin: String, key: Curve25519.Signing.PrivateKey)] = [:]
    static let kid = "audit-log"

    /// - Parameter sealer: nil in tools without the master key: they read public keys only.
    public init(pool: PQPool, sealer: KeySealer?) {
        self.pool = pool
        self.sealer = sealer
    }

    public func origin(realm: String) async throws -> String {
        try await key(realm).origin
    }

    public func sign(_ text: String, realm: String) async throws -> String {
        let (origin, key) = try await key(realm)
        return try SignedNote.sign(text, name: origin, key: key)
    }

    /// The realm log's origin and public key, if it has signed anything yet.
    public nonisolated func publicKey(realm: String) async throws -> (origin: String, publicKey: [UInt8])? {
        try await AuditLogKeysTable.find(realm: realm, pool: pool).map { ($0.name, $0.publicKey) }
    }

    private func key(_ realm: String) async throws -> (origin: String, key: Curve25519.Signing.PrivateKey) {
        if let cached = keys[realm] { return cached }
        guard let sealer else { throw MasterKeyMissing() }
        if try await AuditLogKeysTable.find(realm: realm, pool: pool) == nil {
            let fresh = Curve25519.Signing.PrivateKey()
            let suffix = String(format: "%08x", UInt32.random(in: .min ... .max))
            _ = try await pool.query(
                AuditLogKeysTable.insert(
                    realm: realm,
                    .init(
                        name: "audit.modgud/\(realm)/\(suffix)", publicKey: Array(fresh.publicKey.rawRepresentation),
                        sealedPrivateKey: try sealer.seal(Array(fresh.rawRepresentation), realm: realm, kid: Self.kid))))
        }
        guard let row = try await AuditLogKeysTable.find(realm: realm, pool: pool) else { throw AuditLogKeyMissing(realm: realm) }
        let key = try Curve25519.Signing.PrivateKey(rawRepresentation: sealer.open(row.sealedPrivateKey, realm: realm, kid: Self.kid))
        keys[realm] = (row.name, key)
        return (row.name, key)
    }
}

/// The realm's audit log key could neither be read nor made.
public struct AuditLogKeyMissing: Error, CustomStringConvertible {
    public var realm: String
    public var description: String { "the audit log key of realm \(realm) could not be stored" }
}
