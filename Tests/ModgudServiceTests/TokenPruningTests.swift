import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 70: token rows no request can use are pruned; a live family keeps its spent tokens.
final class TokenPruningTests: XCTestCase {
    func testPruneTakesExpiredAccessTokensAndEndedFamiliesOnly() async throws {
        let database = try await TestDatabase.create(maxConnections: 6)
        let instance = IdentityInstance(pool: database.pool)
        let (live, revoked, lapsed) = (UUID(), UUID(), UUID())
        for (family, name) in [(live, "live"), (revoked, "revoked"), (lapsed, "lapsed")] {
            _ = try await instance.family(family).execute(
                .start(
                    TokenFamilyStarted(
                        familyID: family, clientID: "app", userID: UUID(), scopes: ["openid"], audiences: ["app"], grantType: "urn:cocoar:otp",
                        authTime: now, amr: ["otp"], securityStamp: "s",
                        accessToken: IssuedAccessToken(hash: "a-\(name)", expiresAt: now + 60, format: .reference),
                        refreshTokenHash: "r-\(name)", refreshExpiresAt: now + 600)), now: now, metadata: .none)
        }
        _ = try await instance.family(revoked).execute(.revoke(.admin), now: now, metadata: .none)
        // The live family rotates: its first refresh token is spent, its newest one lasts longer.
        _ = try await instance.family(live).execute(
            .refresh(
                presentedHash: "r-live", newRefreshHash: "r-live-1", newRefreshExpiresAt: now + 900,
                accessToken: IssuedAccessToken(hash: "a-live-1", expiresAt: now + 800, format: .reference), userStamp: "s"),
            now: now, metadata: .none)

        // The cutoff (prune time less the retention) falls at now + 700.
        let report = try await instance.tokens.prune(now: now + TokenTables.retention + 700)

        XCTAssertEqual(report, TokenTables.PruneReport(accessTokens: 3, refreshTokens: 2))
        let access = try await hashes("access_tokens", database.pool)
        let refresh = try await hashes("refresh_tokens", database.pool)
        XCTAssertEqual(access, ["a-live-1"], "expired before the cutoff, gone; unexpired, kept")
        XCTAssertEqual(
            refresh, ["r-live", "r-live-1"],
            "the revoked and the lapsed family's tokens gone; the live family keeps its spent token")
        // Its spent token still finds the family, so a replay reaches the aggregate as reuse.
        let spent = try await instance.tokens.refreshToken(hash: "r-live", realm: "demo")
        XCTAssertEqual(spent?.familyID, live)
        let again = try await instance.tokens.prune(now: now + TokenTables.retention + 700)
        XCTAssertEqual(again, TokenTables.PruneReport(), "nothing left to take")
        await database.drop()
    }

    private func hashes(_ table: String, _ pool: PQPool) async throws -> [String] {
        try await pool.query("SELECT token_hash FROM \(identifier: table) ORDER BY 1").rows.map { try $0.decode(String.self, at: 0) }
    }
}
