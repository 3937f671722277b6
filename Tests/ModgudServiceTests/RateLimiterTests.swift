import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// GCRA in PostgreSQL: bursts, refill, isolation of keys, realm overrides, and concurrency
/// across pools (instances).
final class RateLimiterTests: XCTestCase {
    var database: TestDatabase!

    override func tearDown() async throws {
        await database?.drop()
    }

    final class Clock: Sendable {
        let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func now() -> Date { value.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { value.withLock { $0 += seconds } }
    }

    func testBurstThenOnePerIntervalWithRetryAfter() async throws {
        database = try await TestDatabase.create()
        let clock = Clock()
        let limiter = RateLimiter(pool: database.pool, now: { clock.now() })
        let settings = RealmSettings(hosts: ["x"], displayName: "X")
        for attempt in 1...5 {
            let wait = try await limiter.wait(.requestPerMailbox, key: "m", realm: "r", settings: settings)
            XCTAssertNil(wait, "request \(attempt) of the burst")
        }
        let wait = try await limiter.wait(.requestPerMailbox, key: "m", realm: "r", settings: settings)
        XCTAssertEqual(wait, 720, "5 per hour: the next one in 12 minutes")
        let other = try await limiter.wait(.requestPerMailbox, key: "other", realm: "r", settings: settings)
        XCTAssertNil(other, "keys are counted apart")
        clock.advance(719)
        let early = try await limiter.wait(.requestPerMailbox, key: "m", realm: "r", settings: settings)
        XCTAssertEqual(early, 1)
        clock.advance(1)
        let refilled = try await limiter.wait(.requestPerMailbox, key: "m", realm: "r", settings: settings)
        XCTAssertNil(refilled)
        // Pruning removes only drained buckets.
        clock.advance(3601)  // past the last theoretical arrival time of "m"
        _ = try await limiter.wait(.requestPerMailbox, key: "fresh", realm: "r", settings: settings)
        try await limiter.prune()
        // Per-mailbox buckets live in the logged table (issue 67).
        let keys = try await database.pool.query("SELECT bucket_key FROM rate_limits_durable ORDER BY 1").rows.map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(keys.count, 1, "only the fresh bucket is left")
        XCTAssertNotEqual(keys.first, "fresh", "bucket keys are stored hashed")
    }

    func testRealmOverrideAndConcurrentInstancesNeverOverspend() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        let clock = Clock()
        var settings = RealmSettings(hosts: ["x"], displayName: "X")
        settings.rateLimitOverrides["token.client"] = RateLimitSetting(limit: 10, windowSeconds: 3600, burst: 10)
        let first = RateLimiter(pool: database.pool, now: { clock.now() })
        let second = RateLimiter(pool: database.makePool(maxConnections: 10), now: { clock.now() })
        let frozen = settings
        let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                let limiter = index.isMultiple(of: 2) ? first : second
                group.addTask { try await limiter.wait(.tokenPerClient, key: "app", realm: "r", settings: frozen) == nil }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(allowed, 10, "exactly the burst, decided by the database")
    }

    /// A request's buckets in one statement: each counted; the first rejecting one in the
    /// given order answers; a log-only bucket rejects nothing; an allowlisted source is not
    /// counted at all; and the table writes no WAL.
    func testSeveralBucketsInOneStatement() async throws {
        database = try await TestDatabase.create()
        let clock = Clock()
        let limiter = RateLimiter(pool: database.pool, now: { clock.now() })
        var settings = RealmSettings(hosts: ["x"], displayName: "X")
        settings.rateLimitOverrides["token.ip"] = RateLimitSetting(limit: 2, windowSeconds: 60, burst: 2)
        settings.rateLimitOverrides["token.client"] = RateLimitSetting(limit: 3, windowSeconds: 60, burst: 3)
        settings.rateLimitOverrides["token.client-source"] = RateLimitSetting(limit: 1, windowSeconds: 60, burst: 1, logOnly: true)
        let buckets = [
            RateLimitBucket(.tokenPerIP, key: "10.0.0.1"), RateLimitBucket(.tokenPerClientSource, key: "app 10.0.0.1", source: "10.0.0.1"),
            RateLimitBucket(.tokenPerClient, key: "app", source: "10.0.0.1"),
        ]
        try await limiter.check(buckets, realm: "r", settings: settings)
        let before = PQRoundTrips.total
        try await limiter.check(buckets, realm: "r", settings: settings)  // client-source over its limit, but log-only
        XCTAssertEqual(PQRoundTrips.total - before, 1, "three buckets, one round trip")
        do {
            try await limiter.check(buckets, realm: "r", settings: settings)
            XCTFail("the third request from one source is over token.ip")
        } catch let limited as RateLimited {
            XCTAssertEqual(limited.policy + "." + limited.dimension, "token.ip", "the first rejecting bucket in order answers")
            XCTAssertEqual(limited.retryAfterSeconds, 30)
        }
        // token.client counted all three requests: a fourth from another source meets its limit.
        do {
            try await limiter.check([RateLimitBucket(.tokenPerIP, key: "10.0.0.2"), RateLimitBucket(.tokenPerClient, key: "app")], realm: "r", settings: settings)
            XCTFail("token.client saw three requests")
        } catch let limited as RateLimited {
            XCTAssertEqual(limited.policy + "." + limited.dimension, "token.client")
        }
        // An allowlisted source counts nowhere in that policy.
        settings.rateLimitOverrides["token.ip"]?.allowlist = ["10.0.0.0/24"]
        let prepared = limiter.prepare([RateLimitBucket(.tokenPerIP, key: "10.0.0.1")], realm: "r", settings: settings)
        XCTAssertNil(prepared.query)
        let persistence = try await database.pool.query("SELECT relpersistence::text FROM pg_class WHERE relname = 'rate_limits'").first?
            .decode(String.self, at: 0)
        XCTAssertEqual(persistence, "u", "UNLOGGED: counting waits for no WAL flush")
    }

    /// Issue 67: a mailbox's cap lives in a logged table (WAL-logged, replicated: a crash or a
    /// failover does not start it full again), counted in the same statement as the per-source
    /// bucket; the per-source one stays in the UNLOGGED table.
    func testAMailboxCapIsCountedInTheLoggedTableWithThePerSourceBucketInOneStatement() async throws {
        database = try await TestDatabase.create()
        let limiter = RateLimiter(pool: database.pool, masterKey: Array(repeating: 3, count: 32))
        let settings = RealmSettings(hosts: ["r.test"], displayName: "R")
        for _ in 0..<5 {
            try await limiter.check(
                [RateLimitBucket(.requestPerIP, key: "10.0.0.1"), RateLimitBucket(.requestPerMailbox, key: "ada@example.com")], realm: "r", settings: settings)
        }
        do {
            try await limiter.check(
                [RateLimitBucket(.requestPerIP, key: "10.0.0.2"), RateLimitBucket(.requestPerMailbox, key: "ada@example.com")], realm: "r", settings: settings)
            XCTFail("the sixth code an hour to one mailbox")
        } catch let limited as RateLimited {
            XCTAssertEqual(limited.policy + "." + limited.dimension, "otp-request.mailbox")
        }
        let placed = try await database.pool.query(
            "SELECT policy, 'v' FROM rate_limits UNION ALL SELECT policy, 'd' FROM rate_limits_durable ORDER BY 1").rows.map {
                "\(try $0.decode(String.self, at: 0)):\(try $0.decode(String.self, at: 1))"
            }
        XCTAssertEqual(placed, ["otp-request.ip:v", "otp-request.ip:v", "otp-request.mailbox:d"])
        let persistence = try await database.pool.query("SELECT relpersistence::text FROM pg_class WHERE relname = 'rate_limits_durable'").first?
            .decode(String.self, at: 0)
        XCTAssertEqual(persistence, "p", "logged: survives crash recovery, replicated to the standby")
    }

    /// Issue 22: an operator who raises a limit during an incident frees a saturated bucket on
    /// the next request; one who lowers it never bars a source past the new setting's bucket.
    func testAChangedSettingActsOnTheNextRequest() async throws {
        database = try await TestDatabase.create()
        let clock = Clock()
        let limiter = RateLimiter(pool: database.pool, now: { clock.now() })
        var settings = RealmSettings(hosts: ["x"], displayName: "X")
        settings.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 10, windowSeconds: 3600, burst: 10)
        for _ in 0..<10 { _ = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings) }
        let saturated = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings)
        XCTAssertEqual(saturated, 360, "saturated: 10 per hour, the next in 6 minutes")
        // The operator raises the limit; the very next request passes, and the bucket is counted
        // at the new rate from then on.
        settings.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 100_000_000, windowSeconds: 60, burst: 100_000_000)
        for attempt in 1...100 {
            let wait = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings)
            XCTAssertNil(wait, "request \(attempt) after raising the limit")
        }
        // Lowered again to 2 per hour: the full bucket waits at most the new bucket's time.
        settings.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 2, windowSeconds: 3600, burst: 2)
        for _ in 0..<2 { _ = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings) }
        let loweredWait = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings)
        let lowered = try XCTUnwrap(loweredWait)
        XCTAssertLessThanOrEqual(lowered, 1800, "never more than one interval of the new setting")
        clock.advance(TimeInterval(lowered))
        let after = try await limiter.wait(.signupPerIP, key: "198.51.100.7", realm: "r", settings: settings)
        XCTAssertNil(after, "free again once the new setting's interval passed")
    }

    /// Issue 22: the silent `signup.ip` limit honours log-only and the allowlist like every
    /// other policy, and counts its drops in the metrics.
    func testTheSilentLimitGoesThroughTheSamePath() async throws {
        database = try await TestDatabase.create()
        let clock = Clock()
        let limiter = RateLimiter(pool: database.pool, now: { clock.now() })
        var settings = RealmSettings(hosts: ["x"], displayName: "X")
        settings.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 2, windowSeconds: 3600, burst: 2)
        let bucket = RateLimitBucket(.signupPerIP, key: "203.0.113.9")
        var admitted = 0
        for _ in 0..<5 { if try await limiter.admitSilently(bucket, realm: "r", settings: settings) { admitted += 1 } }
        XCTAssertEqual(admitted, 2, "enforced: the burst, then silent drops")
        settings.rateLimitOverrides["signup.ip"]?.logOnly = true
        admitted = 0
        for _ in 0..<5 { if try await limiter.admitSilently(bucket, realm: "r", settings: settings) { admitted += 1 } }
        XCTAssertEqual(admitted, 5, "log-only drops nothing")
        settings.rateLimitOverrides["signup.ip"]?.logOnly = false
        settings.rateLimitOverrides["signup.ip"]?.allowlist = ["203.0.113.0/24"]
        admitted = 0
        for _ in 0..<5 { if try await limiter.admitSilently(bucket, realm: "r", settings: settings) { admitted += 1 } }
        XCTAssertEqual(admitted, 5, "an allowlisted source is not limited")
    }
}

extension RateLimiter {
    /// Counts one request through `check`; nil when allowed, else its Retry-After seconds.
    func wait(_ policy: RateLimitPolicy, key: String, realm: String, settings: RealmSettings) async throws -> Int? {
        do {
            try await check(policy, key: key, realm: realm, settings: settings)
            return nil
        } catch let limited as RateLimited {
            return limited.retryAfterSeconds
        }
    }
}
