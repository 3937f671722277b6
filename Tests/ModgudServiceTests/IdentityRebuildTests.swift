import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class IdentityRebuildTests: XCTestCase {
    func testEveryIdentityReadModelRebuildsToWhatOperationProduced() async throws {
        // A clock with a fraction of a second, as the server's is: an inline projection must
        // write what the log says, which a rebuild reads back (issue 27: a shortcut that wrote
        // the appender's unencoded dates passed with whole seconds and failed in production).
        let now = Date(timeIntervalSince1970: 1_800_000_000.353_609)
        let database = try await TestDatabase.create(maxConnections: 10)
        let instance = IdentityInstance(pool: database.pool)
        _ = try await instance.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
        var changed = demoSettings
        changed.hosts = ["login.demo.test", "auth.demo.test"]
        changed.nativeGrants.enabled = true
        _ = try await instance.realm("demo").execute(.changeSettings(changed), now: now, metadata: .none)
        _ = try await instance.realm("demo").execute(.rotateSigningKey(kid: "k1", algorithm: "ES256", publicJWK: #"{"kty":"EC"}"#), now: now, metadata: .none)
        let client = await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app"))
        _ = try await client.execute(
            .register(id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid"]), secretHash: nil),
            now: now, metadata: .none)
        _ = try await client.execute(.disable, now: now, metadata: .none)
        for index in 0..<5 {
            let id = UUID()
            _ = try await instance.user(id).execute(
                .register(id: id, email: .plain("u\(index)@example.com"), emailConfirmed: index % 2 == 0, username: nil,
                    firstName: .plain("F\(index)"), lastName: nil, securityStamp: "s", via: "otp"), now: now, metadata: .none)
            if index == 3 { _ = try await instance.user(id).execute(.disable(newStamp: "s2"), now: now, metadata: .none) }
            let family = UUID()
            _ = try await instance.family(family).execute(
                .start(
                    TokenFamilyStarted(
                        familyID: family, clientID: "app", userID: id, scopes: ["openid"], audiences: ["app"], grantType: "urn:cocoar:otp",
                        authTime: now, amr: ["otp"], securityStamp: "s", accessToken: IssuedAccessToken(hash: "a\(index)", expiresAt: now + 60, format: .reference),
                        refreshTokenHash: "r\(index)", refreshExpiresAt: now + 600)), now: now, metadata: .none)
            if index == 1 { _ = try await instance.family(family).execute(.revoke(.admin), now: now, metadata: .none) }
            if index >= 2 { try await refreshChain(instance.family(family), index: index, now: now) }
        }
        let passkeys = AggregateRegistry<Passkey>(store: instance.store)
        for index in 0..<3 {
            let id = UUID()
            let passkey = await passkeys.actor(for: StreamNames.passkey(realm: "demo", passkeyID: id))
            _ = try await passkey.execute(
                .enroll(
                    PasskeyEnrolled(
                        passkeyID: id, userID: UUID(), credentialID: "Y3JlZGVudGlhbC0\(index)", rpID: "demo.test", publicKey: "cGs", algorithm: -7,
                        signCount: 0, aaguid: "AA", backupEligible: false, backedUp: false, transports: [], attestationFormat: "none",
                        displayName: .plain("Key \(index)"), clientID: "app", createdAt: now)), now: now, metadata: .none)
            if index == 0 { _ = try await passkey.execute(.recordUse(signCount: 3, backedUp: false, at: now + 5), now: now, metadata: .none) }
            if index == 2 { _ = try await passkey.execute(.delete(by: "admin"), now: now, metadata: .none) }
        }
        for projection in ProjectionCatalog.identity {
            var before: [String: [String]] = [:]
            for table in projection.tables { before[table] = try await snapshot(table, database.pool) }
            _ = try await ProjectionRebuilder(pool: database.pool).rebuild(projection)
            for table in projection.tables {
                let after = try await snapshot(table, database.pool)
                XCTAssertEqual(after, before[table], "\(projection.name): \(table)")
                XCTAssertFalse(after.isEmpty, "\(table) had rows to compare")
            }
        }
        await database.drop()
    }

    /// Two rotations (the second narrows the scopes and binds a DPoP key); for index 4, then a
    /// replay of the first refresh token, which revokes the family as reuse. The token
    /// projection's rebuild folds these into set-based statements (issue 70), which must give
    /// the rows one-by-one application gave.
    private func refreshChain(_ family: AggregateActor<TokenFamily>, index: Int, now: Date) async throws {
        for (step, presented) in ["r\(index)", "r\(index)-1"].enumerated() {
            let access = IssuedAccessToken(
                hash: "a\(index)-\(step + 1)", expiresAt: now + 120, format: .reference, dpopKey: step == 1 ? "jkt" : nil,
                scopes: step == 1 ? [] : nil)
            _ = try await family.execute(
                .refresh(
                    presentedHash: presented, newRefreshHash: "r\(index)-\(step + 1)", newRefreshExpiresAt: now + 900, accessToken: access,
                    userStamp: "s"),
                now: now, metadata: .none)
        }
        if index == 4 {
            _ = try await family.execute(
                .refresh(
                    presentedHash: "r\(index)", newRefreshHash: "r\(index)-x", newRefreshExpiresAt: now + 900,
                    accessToken: IssuedAccessToken(hash: "a\(index)-x", expiresAt: now + 120, format: .reference), userStamp: "s"),
                now: now, metadata: .none)
        }
    }

    /// Every row as text, sorted; time columns written by the database (`now()` defaults) excluded.
    private func snapshot(_ table: String, _ pool: PQPool) async throws -> [String] {
        let ignored: Set<String> = ["created_at", "updated_at", "registered_at", "started_at"]
        let columns = try await pool.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = \(table) ORDER BY ordinal_position"
        ).rows.map { try $0.decode(String.self, at: 0) }.filter { !ignored.contains($0) }
        let list = columns.map { "coalesce(\(PQQuery.quoteIdentifier($0))::text, 'NULL')" }.joined(separator: " || '|' || ")
        return try await pool.query("SELECT \(unescaped: list) FROM \(identifier: table) ORDER BY 1").rows.map { try $0.decode(String.self, at: 0) }
    }
}
