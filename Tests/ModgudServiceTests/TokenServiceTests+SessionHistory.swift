import Foundation
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 70: `bench scale` ages sessions through `SessionHistory`, a bulk path that must leave
/// the rows the request path leaves. An aged session refreshes with its newest token through
/// the token service; every token it spent on the way is a reuse that revokes the family.
extension TokenServiceTests {
    func testAnAgedSessionIsOneTheTokenServiceRefreshesAndGuards() async throws {
        let history = SessionHistory(pool: database.pool, store: instance.store, families: instance.families, now: { Date() })
        let first = try await signIn()
        let (aged, appended) = try await history.age([try XCTUnwrap(first.refreshToken)], realm: "demo", rotations: 5, metadata: .none)
        XCTAssertEqual(appended, 5)
        let client = try await authenticator.authenticate(realm: "demo", clientID: "app", secret: nil)
        let lookup = TokenTables.refreshLookupQuery(presentedHash: OpaqueToken.hash(aged[0]), realm: "demo")
        let result = try await database.pool.query(lookup)
        let found = try XCTUnwrap(try TokenTables.refreshLookup(result), "the projection holds the newest token")
        XCTAssertEqual(found.familyVersion, 6, "started, then five rotations")
        let refreshed = try await service.refresh(RefreshRequest(client: client, refreshToken: aged[0], issuer: issuer, metadata: .none))
        XCTAssertNotNil(refreshed.refreshToken)
        // The first token was spent five rotations ago: presenting it is reuse.
        await expect("invalid_grant") {
            _ = try await self.service.refresh(RefreshRequest(client: client, refreshToken: first.refreshToken!, issuer: self.issuer, metadata: .none))
        }
        await expect("invalid_grant") {
            _ = try await self.service.refresh(RefreshRequest(client: client, refreshToken: refreshed.refreshToken!, issuer: self.issuer, metadata: .none))
        }
    }

    /// The rotations are the aggregate's own decisions: generations count up, each spends the
    /// token before it, and a revoked family refuses to be aged.
    func testTheRotationsAreTheFamilysOwnDecisions() throws {
        let started = TokenFamilyStarted(
            familyID: UUID(), clientID: "app", userID: UUID(), scopes: ["openid"], audiences: ["app"], grantType: "otp", authTime: now, amr: ["otp"],
            securityStamp: "s1", accessToken: IssuedAccessToken(hash: "a0", expiresAt: now + 900, format: .reference), refreshTokenHash: "r0",
            refreshExpiresAt: now + 86_400)
        let state = TokenFamily.evolve(TokenFamily.initialState, .started(started))
        let (events, token) = try SessionHistory.rotations(of: state, count: 3, spacing: 60, endingAt: now + 600)
        let refreshed = events.compactMap { event -> TokenFamilyRefreshed? in
            if case .refreshed(let value) = event { return value } else { return nil }
        }
        XCTAssertEqual(refreshed.map(\.generation), [1, 2, 3])
        XCTAssertEqual(refreshed.first?.spentRefreshHash, "r0")
        XCTAssertEqual(refreshed[1].spentRefreshHash, refreshed[0].refreshTokenHash)
        XCTAssertEqual(refreshed.last?.refreshTokenHash, OpaqueToken.hash(token))
        XCTAssertEqual(refreshed.last?.rotatedAt, now + 600)
        let revoked = TokenFamily.evolve(state, .revoked(TokenFamilyRevoked(reason: .logout, presentedRefreshHash: nil)))
        XCTAssertThrowsError(try SessionHistory.rotations(of: revoked, count: 1, spacing: 60, endingAt: now))
    }
}
