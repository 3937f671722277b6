import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class TokenFamilyServiceTests: XCTestCase {
    var database: TestDatabase!
    var instance: IdentityInstance!
    let userID = UUID()
    let familyID = UUID()

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 40)
        instance = IdentityInstance(pool: database.pool)
        // Tokens are live only while their client exists.
        _ = try await instance.clients.actor(for: StreamNames.client(realm: "demo", clientID: "app")).execute(
            .register(id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid"]), secretHash: nil),
            now: now, metadata: .none)
        _ = try await instance.user(userID).execute(
            .register(
                id: userID, email: .plain("ada@example.com"), emailConfirmed: true, username: nil, firstName: nil, lastName: nil,
                securityStamp: "s1", via: "admin"), now: now, metadata: .none)
        let started = TokenFamilyStarted(
            familyID: familyID, clientID: "app", userID: userID, scopes: ["openid", "offline_access"], audiences: ["app"],
            grantType: "urn:cocoar:otp", authTime: now, amr: ["otp"], securityStamp: "s1",
            accessToken: IssuedAccessToken(hash: "a0", expiresAt: now + 900, format: .reference), refreshTokenHash: "r0",
            refreshExpiresAt: now + 14 * 86400)
        _ = try await instance.family(familyID).execute(.start(started), now: now, metadata: .none)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// Presents a refresh token the way the token endpoint will: look it up, then ask the family.
    func refresh(_ presented: String, to next: String, on target: IdentityInstance) async throws -> [TokenFamilyEvent] {
        try await Self.refresh(presented, to: next, on: target, userID: userID)
    }

    static func refresh(_ presented: String, to next: String, on target: IdentityInstance, userID: UUID) async throws -> [TokenFamilyEvent] {
        guard let found = try await target.tokens.refreshToken(hash: presented, realm: "demo") else { return [] }
        let stamp = try await target.user(userID).current().state.securityStamp
        return try await target.family(found.familyID).execute(
            .refresh(
                presentedHash: presented, newRefreshHash: next, newRefreshExpiresAt: now + 14 * 86400,
                accessToken: IssuedAccessToken(hash: "a-\(next)", expiresAt: now + 900, format: .reference), userStamp: stamp),
            now: now, metadata: .none
        ).events
    }

    func testRotationThenReuseRevokesTheFamilyAndItsTokens() async throws {
        let first = try await refresh("r0", to: "r1", on: instance)
        guard case .refreshed = first.first else { return XCTFail("\(first)") }
        let live = try await instance.tokens.accessToken(hash: "a-r1", realm: "demo", now: now)
        XCTAssertEqual(live?.scopes, ["openid", "offline_access"])
        XCTAssertEqual(live?.userID, userID)
        // The spent token still finds its family (the family knows it is spent), so its replay is reuse.
        let spent = try await instance.tokens.refreshToken(hash: "r0", realm: "demo")
        XCTAssertNotNil(spent)

        let replay = try await refresh("r0", to: "rX", on: instance)
        XCTAssertEqual(replay, [.revoked(TokenFamilyRevoked(reason: .reuse, presentedRefreshHash: "r0"))])
        for hash in ["a0", "a-r1"] {
            let token = try await instance.tokens.accessToken(hash: hash, realm: "demo", now: now)
            XCTAssertNil(token, "\(hash) died with the family")
        }
        let afterReuse = try await refresh("r1", to: "r2", on: instance)
        XCTAssertEqual(afterReuse.count, 1, "the newest refresh token died with the family: refused, and recorded")
        guard case .refreshRefused(let refused) = afterReuse.first else { return XCTFail("\(afterReuse)") }
        XCTAssertEqual(refused.reason, .revoked)
        XCTAssertEqual(refused.revokedBecause, .reuse)
        let reasons = try await database.pool.query("SELECT revoked_reason FROM token_families").first!.decode(String.self, at: 0)
        XCTAssertEqual(reasons, "reuse")
    }

    func testFiftyConcurrentRefreshesAcrossTwoInstancesExactlyOneSucceeds() async throws {
        let second = IdentityInstance(pool: database.makePool(maxConnections: 30))
        let first = instance!
        let userID = self.userID
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<50 {
                let target = index % 2 == 0 ? first : second
                group.addTask {
                    do {
                        switch try await Self.refresh("r0", to: "n\(index)", on: target, userID: userID).first {
                        case .refreshed: return "refreshed"
                        case .revoked(let revoked): return "revoked:\(revoked.reason.rawValue)"
                        case .refreshRefused, nil: return "refused"
                        default: return "other"
                        }
                    } catch let error as DomainError {
                        return error.code
                    } catch {
                        return "error:\(error)"
                    }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        XCTAssertEqual(outcomes["refreshed"], 1, "\(outcomes)")
        // Documented outcome: the next presentation of the spent token is reuse and revokes the
        // family; every later one finds the family revoked, and the first of those is recorded
        // (one a minute: issue 43).
        XCTAssertEqual(outcomes["revoked:reuse"], 1, "\(outcomes)")
        XCTAssertEqual(outcomes["refused"], 48, "\(outcomes)")
        let versions = try await first.store.readStream(StreamNames.tokenFamily(realm: "demo", familyID: familyID).id, after: 0).map(\.type)
        XCTAssertEqual(versions, ["token_family.started", "token_family.refreshed", "token_family.revoked", "token_family.refresh_refused"])
        await second.pool.close()
    }

    func testLogoutEverywhereKillsAccessTokensAtOnceAndTheNextRefresh() async throws {
        let before = try await instance.tokens.accessToken(hash: "a0", realm: "demo", now: now)
        XCTAssertNotNil(before)
        _ = try await instance.user(userID).execute(.rotateSecurityStamp(newStamp: "s2", reason: .logoutEverywhere), now: now, metadata: .none)
        let after = try await instance.tokens.accessToken(hash: "a0", realm: "demo", now: now)
        XCTAssertNil(after, "a reference token is inactive the moment the stamp changes")
        let events = try await refresh("r0", to: "r1", on: instance)
        XCTAssertEqual(events, [.revoked(TokenFamilyRevoked(reason: .stamp, presentedRefreshHash: nil))])
    }

    func testDisabledUserTokensAreInactiveAndExpiredOnesToo() async throws {
        let expired = try await instance.tokens.accessToken(hash: "a0", realm: "demo", now: now + 901)
        XCTAssertNil(expired)
        let otherRealm = try await instance.tokens.accessToken(hash: "a0", realm: "elsewhere", now: now)
        XCTAssertNil(otherRealm, "a token only counts in its realm")
        _ = try await instance.user(userID).execute(.disable(newStamp: "s9"), now: now, metadata: .none)
        let disabled = try await instance.tokens.accessToken(hash: "a0", realm: "demo", now: now)
        XCTAssertNil(disabled)
    }
}
