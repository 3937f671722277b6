import AsyncTestSupport
import Foundation
import Logging
import ModgudClient
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// Issue 12: what a grant costs in round trips, and that per-instance caches still see every
/// change (here at once, on another instance within milliseconds by NOTIFY).
final class HotPathTests: XCTestCase {
    /// A core on a new database with realm `dev`, a user, its public client and the realm's settings.
    static func seeded() async throws -> (TestDatabase, ModgudCore, User.State, AuthenticatedClient, RealmSettings) {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let user = try await TestRealm.seed(core)
        let app = try await core.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)
        let entry = try await core.realmDirectory.realm(forHost: "localhost")
        return (database, core, user, app, try XCTUnwrap(entry).settings)
    }

    /// A warm refresh: the rate-limit count and the lookup in one pipeline, then the append.
    func testAWarmRefreshIsTwoRoundTrips() async throws {
        let (database, core, user, app, settings) = try await Self.seeded()
        func refresh(_ token: String) async throws -> TokenResponse {
            let count = core.rateLimiter.prepare(
                [RateLimitBucket(.tokenPerIP, key: "10.0.0.1"), RateLimitBucket(.tokenPerClient, key: "app")], realm: "dev", settings: settings)
            return try await core.tokenService.refresh(
                RefreshRequest(
                    client: app, refreshToken: token, issuer: "https://localhost", metadata: .init(), checks: GrantChecks(rateLimit: count)))
        }
        let signedIn = try await TestRealm.signIn(core, user)
        let first = try await refresh(try XCTUnwrap(signedIn.refreshToken))
        await core.store.notificationsSent()  // the after-commit NOTIFY of the first append has gone out
        let before = PQRoundTrips.total
        let second = try await refresh(try XCTUnwrap(first.refreshToken))
        XCTAssertNotNil(second.refreshToken)
        await core.store.notificationsSent()
        // 2 for the grant; 1 for the NOTIFY after the commit that wakes projection daemons
        // (one per append when idle, folded into one for many appends under load).
        XCTAssertEqual(PQRoundTrips.total - before, 3)
        await database.drop()
    }

    /// A warm DPoP-bound refresh costs the same two round trips: the proof's jti claim rides
    /// in the pipeline with the count and the lookup (issue 29), and a replayed proof is
    /// refused there, before anything is spent.
    func testAWarmBoundRefreshIsTwoRoundTripsToo() async throws {
        let (database, core, user, app, settings) = try await Self.seeded()
        let verifier = try XCTUnwrap(core.dpop)
        let key = SoftwareDPoPKey()
        let endpoint = URL(string: "https://localhost/connect/token")!
        func refresh(_ token: String, proof: String) async throws -> TokenResponse {
            let count = core.rateLimiter.prepare([RateLimitBucket(.tokenPerIP, key: "10.0.0.1")], realm: "dev", settings: settings)
            let checked = try verifier.check(proof, method: "POST", url: endpoint.absoluteString)
            return try await core.tokenService.refresh(
                RefreshRequest(
                    client: app, refreshToken: token, issuer: "https://localhost", metadata: .init(), dpopKey: checked.proof.key.thumbprint,
                    checks: GrantChecks(rateLimit: count, dpopClaim: checked.claim)))
        }
        let signedIn = try await core.tokenService.signIn(
            client: app, user: user, grantType: .otp, scope: "openid offline_access", resources: [], amr: ["otp"], issuer: "https://localhost",
            dpopKey: key.thumbprint, metadata: .init())
        let first = try await refresh(try XCTUnwrap(signedIn.refreshToken), proof: try key.proof(method: "POST", url: endpoint))
        XCTAssertEqual(first.tokenType, "DPoP")
        await core.store.notificationsSent()
        let before = PQRoundTrips.total
        let proof = try key.proof(method: "POST", url: endpoint)
        let second = try await refresh(try XCTUnwrap(first.refreshToken), proof: proof)
        XCTAssertNotNil(second.refreshToken)
        await core.store.notificationsSent()
        XCTAssertEqual(PQRoundTrips.total - before, 3, "as a bearer refresh: the claim added no round trip")
        do {
            _ = try await refresh(try XCTUnwrap(second.refreshToken), proof: proof)
            XCTFail("a replayed proof")
        } catch let error as DPoPError {
            XCTAssertEqual(error, .replayed)
        }
        let third = try await refresh(try XCTUnwrap(second.refreshToken), proof: try key.proof(method: "POST", url: endpoint))
        XCTAssertNotNil(third.refreshToken, "the replay spent nothing: the same token refreshes with a new proof")
        await database.drop()
    }

    /// A warm OTP sign-up (issue 49): the rate-limit count rides with the code's read (one round
    /// trip), then the append; the passkey-upgrade hint of a user the grant created needs no
    /// lookup. Over the limit, the same pipeline refuses with a 429 and the code stays unspent.
    func testAWarmOTPSignUpIsTwoRoundTripsAndItsCountRidesWithTheCodesRead() async throws {
        let (database, core, _, _, realmSettings) = try await Self.seeded()
        _ = try await core.administration.realms.update("dev", metadata: .init()) {
            $0.primaryDomain = "example.com"
            $0.nativeGrants.enabled = true  // to give the client its native grants (issue 65, item 7)
        }
        _ = try await core.administration.clients.create(
            realm: "dev", id: "native", settings: ClientSettings(type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "offline_access"]),
            metadata: .init())
        _ = try await core.administration.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
        let native = try await core.clientAuthenticator.authenticate(realm: "dev", clientID: "native", secret: nil)
        let fixtures = core.loadFixtures()
        func grant(limit: Int, source: String) -> UserGrantRequest {
            var settings = realmSettings
            settings.rateLimitOverrides[RateLimitPolicy.tokenPerIP.name] = RateLimitSetting(limit: limit, windowSeconds: 3600, burst: limit)
            var grant = UserGrantRequest(
                client: native, scope: "openid offline_access", resources: [], totpCode: nil, issuer: "https://localhost", metadata: .init())
            grant.checks = GrantChecks(rateLimit: core.rateLimiter.prepare([RateLimitBucket(.tokenPerIP, key: source)], realm: "dev", settings: settings))
            return grant
        }
        // A first sign-up warms the caches (the realm's lifetimes, its signing key, the client).
        let first = try XCTUnwrap(EmailAddress("first.user@example.com"))
        let firstCode = try await fixtures.registrationCode(email: first, realm: "dev", metadata: .init())
        _ = try await core.emailSignIn().redeemCode(email: first.value, code: firstCode, grant(limit: 100, source: "10.0.0.9"))
        let email = try XCTUnwrap(EmailAddress("new.user@example.com"))
        let code = try await fixtures.registrationCode(email: email, realm: "dev", metadata: .init())
        await core.store.notificationsSent()
        let before = PQRoundTrips.total
        let response = try await core.emailSignIn().redeemCode(email: email.value, code: code, grant(limit: 100, source: "10.0.0.9"))
        let hint = await core.passkeys.upgradeHint(for: response, client: native)
        await core.store.notificationsSent()
        XCTAssertNotNil(response.refreshToken)
        XCTAssertEqual(hint, true, "a new user holds no passkey: the app may offer one")
        // 1: the count with the code's read; 1: the append (user, consumed code, token family);
        // 1: the NOTIFY after the commit. No round trip of its own for the count or the hint.
        XCTAssertEqual(PQRoundTrips.total - before, 3)

        // A bucket of one request: the first is admitted (and refused for its wrong code), the
        // second is over the limit and spends nothing, so the code still signs up afterwards.
        let other = try XCTUnwrap(EmailAddress("other.user@example.com"))
        let otherCode = try await fixtures.registrationCode(email: other, realm: "dev", metadata: .init())
        do {
            _ = try await core.emailSignIn().redeemCode(email: other.value, code: otherCode == "000000" ? "000001" : "000000", grant(limit: 1, source: "10.0.0.8"))
            XCTFail("a wrong code")
        } catch let error as OAuthError {
            XCTAssertEqual(error.error, "invalid_grant")
        }
        do {
            _ = try await core.emailSignIn().redeemCode(email: other.value, code: otherCode, grant(limit: 1, source: "10.0.0.8"))
            XCTFail("over the limit")
        } catch is RateLimited {}
        let signedUp = try await core.emailSignIn().redeemCode(email: other.value, code: otherCode, grant(limit: 100, source: "10.0.0.8"))
        XCTAssertNotNil(signedUp.refreshToken, "the code was still unspent after the 429")
        await database.drop()
    }

    /// A client disabled and a realm changed through one instance: the other instance's
    /// caches drop them by NOTIFY, long before their 5-second age limit.
    func testChangesReachTheOtherInstanceByNotify() async throws {
        let database = try await TestDatabase.create(maxConnections: 20)
        let first = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let secondPool = database.makePool(maxConnections: 10)
        // The second instance would hold its settings for an hour: only NOTIFY can drop them.
        let second = try ModgudCore(pool: secondPool, masterKey: Array(repeating: 3, count: 32), settingsMaxAge: .seconds(3600))
        _ = try await TestRealm.seed(first)
        let listening = Mutex(false)
        let listener = Task {
            await SettingsChangeListener(
                configuration: secondPool.configuration, invalidate: { second.settingsNotifier.invalidateLocally($0) }, logger: Logger(label: "test"), onListening: { listening.withLock { $0 = true } }
            ).run()
        }
        try await Eventually.wait("the second instance listens") { listening.withLock { $0 } }
        _ = try await second.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)  // cached on the second
        let seen = try await second.realmDirectory.realm(forHost: "localhost")
        XCTAssertEqual(seen?.settings.displayName, "Dev")

        let admin = first.administration
        _ = try await admin.clients.setEnabled(realm: "dev", id: "app", enabled: false, metadata: .init())
        _ = try await admin.realms.update("dev", metadata: .init()) { $0.displayName = "Renamed" }
        try await Eventually.wait("the second instance sees both changes (its caches' age limit is an hour: by NOTIFY)") {
            var refused = false
            do {
                _ = try await second.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil)
            } catch let error as OAuthError {
                refused = error == .invalidGrant("The OAuth client is disabled.")
            }
            let renamed = try await second.realmDirectory.realm(forHost: "localhost")?.settings.displayName == "Renamed"
            return refused && renamed
        }
        // On the first instance the change is visible at once (dropped locally).
        await XCTAssertThrowsErrorAsync(try await first.clientAuthenticator.authenticate(realm: "dev", clientID: "app", secret: nil))
        listener.cancel()
        await listener.value
        await secondPool.close()
        await database.drop()
    }

    /// An actor handed out as new for a stream that exists after all reads it on conflict and
    /// decides again: a second start of one family is refused, nothing is written twice.
    func testAStreamWronglyAssumedNewIsCaughtByTheAppend() async throws {
        let database = try await TestDatabase.create(maxConnections: 10)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        _ = try await TestRealm.seed(core)
        let familyID = UUID()
        let stream = StreamNames.tokenFamily(realm: "dev", familyID: familyID)
        let started = TokenFamilyStarted(
            familyID: familyID, clientID: "app", userID: nil, scopes: [], audiences: [], grantType: "client_credentials", authTime: Date(), amr: [],
            securityStamp: nil, accessToken: .init(hash: "h1", expiresAt: Date().addingTimeInterval(60), format: .reference))
        _ = try await core.familyActors.actor(forNew: stream).execute(.start(started), now: Date(), metadata: .init())
        let other = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        do {
            _ = try await other.familyActors.actor(forNew: stream).execute(.start(started), now: Date(), metadata: .init())
            XCTFail("the family exists")
        } catch is DomainError {}
        let events = try await database.pool.query("SELECT count(*)::int8 FROM events WHERE stream_id = \(stream.id)").first?.decode(Int64.self, at: 0)
        XCTAssertEqual(events, 1)
        await database.drop()
    }
}

private func XCTAssertThrowsErrorAsync(_ expression: @autoclosure () async throws -> some Any, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        _ = try await expression()
        XCTFail("expected an error", file: file, line: line)
    } catch {}
}
