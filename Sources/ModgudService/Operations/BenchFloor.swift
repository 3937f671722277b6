import Crypto
import EventStorePostgres
import Foundation
import JWTKit
import PQ

/// The least a grant can cost on this stack (issue 49; `modgud bench floor`): what every grant
/// does at the bottom, with nothing of Modgud's rules around it. A token endpoint must sign a
/// token (one ES256 JWT, as `TokenMinter` signs with jwt-kit) and make it durable (one row,
/// committed through `PQ` with group commit, `AppendBatcher`, as the event store commits an
/// append; fsync and synchronous commit as configured, every answer after its commit).
/// `bench load` prints each scenario's rate as a fraction of this one's.
public struct BenchFloor: Sendable {
    let keys: JWTKeyCollection
    let batcher: AppendBatcher

    /// A fresh ES256 key, and the group commit the event store uses by default.
    public static func open(pool: PQPool) async throws -> BenchFloor {
        _ = try await pool.query(BenchFloorTable.create)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: ES256PrivateKey(), kid: "floor")
        return BenchFloor(keys: keys, batcher: AppendBatcher(pool: pool, options: AppendBatcher.Options()))
    }

    /// An access token's claims, of the size Modgud's carry.
    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var client_id: String
        var scope: String
        var iat: Int
        var exp: Int
        var jti: String

        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// One signed token for `clientID`.
    public func sign(clientID: String, now: Date) async throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        return try await keys.sign(
            Claims(
                iss: "https://bench.load.test", sub: UUID().uuidString.lowercased(), aud: clientID, client_id: clientID, scope: "openid offline_access",
                iat: issued, exp: issued + 900, jti: UUID().uuidString.lowercased()), kid: "floor")
    }

    /// One durable row, committed with whatever else is committing (group commit).
    public func commit(clientID: String, token: String, now: Date) async throws {
        let id = UUID()
        let hash = SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
        _ = try await batcher.commit([BenchFloorTable.insert(id: id, clientID: clientID, tokenHash: hash, now: now)], sortKey: id.uuidString)
    }
}
