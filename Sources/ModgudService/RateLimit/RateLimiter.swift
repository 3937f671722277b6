import Crypto
import Foundation
import Logging
import Metrics
import ModgudDomain
import PQ

/// Rate limits counted in PostgreSQL, so every instance shares them (docs: "Rate limits").
///
/// GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp): each key
/// stores its theoretical arrival time `tat`; a request at `now` is allowed when
/// `max(tat, now) - now <= (burst - 1) * interval` and then moves `tat` on by one interval
/// (`window / limit`). One upsert (`RateLimitsTable.count`) decides all of a request's buckets, so concurrent requests
/// on several instances cannot overspend. The per-source and per-client buckets are UNLOGGED
/// (migration 0007): counting them waits for no WAL flush. The per-mailbox buckets, which
/// protect a person (`RateLimitPolicy.durable`), are logged and replicated (migration 0027):
/// neither a crash nor a failover starts them full again.
///
/// Every policy goes through one path (`prepare`, then `RateLimitCheck.verdict` or
/// `.admitted`): the allowlist, log-only, the metrics and a log notice apply to each alike.
///
/// A changed setting acts on the next request: the stored debt (`tat - now`) is counted in
/// requests of the interval it was stored with, re-timed at the new interval, and capped at a
/// full bucket of the new setting. Raising a limit therefore frees a saturated bucket at once;
/// lowering one never bars a source for longer than the new setting's own full bucket.
///
/// Bucket keys are stored as keyed hashes (HMAC-SHA256 under a subkey of the master key), so
/// the table, its files and its backups hold no client address or mailbox.
public struct RateLimiter: Sendable {
    let pool: PQPool
    let now: @Sendable () -> Date
    private let keying: SymmetricKey
    /// Where tripped buckets are recorded (nil: a tool's limiter, which records nothing).
    let trips: RateLimitTrips?

    /// - Parameter masterKey: the key bucket names are hashed under (a tool without it uses a
    ///   fixed key: its buckets are still no plain addresses, but not secret either).
    public init(pool: PQPool, masterKey: [UInt8]? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(pool: pool, masterKey: masterKey, trips: nil, now: now)
    }

    init(pool: PQPool, masterKey: [UInt8]?, trips: RateLimitTrips?, now: @escaping @Sendable () -> Date) {
        self.pool = pool
        self.now = now
        self.trips = trips
        keying = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey ?? Array(repeating: 0, count: 32)), salt: Array("modgud".utf8),
            info: Array("rate-limit bucket keys v1".utf8), outputByteCount: 32)
    }

    /// Counts one request against one policy; throws `RateLimited` when over the limit.
    /// - Parameter source: the request's source key, for the policy's allowlist (defaults to
    ///   `key` for per-source policies).
    public func check(_ policy: RateLimitPolicy, key: String, realm: String, settings: RealmSettings, source: String? = nil) async throws {
        try await check([RateLimitBucket(policy, key: key, source: source)], realm: realm, settings: settings)
    }

    /// Counts one request against several policies in one statement; throws `RateLimited` for
    /// the first bucket (in the given order) over its limit. Every bucket is counted, and a
    /// rejected request is not counted in the bucket that rejected it.
    public func check(_ buckets: [RateLimitBucket], realm: String, settings: RealmSettings) async throws {
        try await prepare(buckets, realm: realm, settings: settings).run(on: pool)
    }

    /// Runs a prepared count on its own (one round trip; none when nothing is counted);
    /// throws `RateLimited` as `check` does.
    public func run(_ check: RateLimitCheck) async throws {
        try await check.run(on: pool)
    }

    /// Counts one request against a limit the client must not learn of (`signup.ip`: a 429
    /// would tell that an address is new). The same path as `check`: allowlist, log-only,
    /// metrics and notices. Returns false when the request is to be dropped silently.
    public func admitSilently(_ bucket: RateLimitBucket, realm: String, settings: RealmSettings) async throws -> Bool {
        let check = prepare([bucket], realm: realm, settings: settings)
        guard let query = check.query else { return true }
        return try check.admitted(try await pool.query(query), silently: true)
    }

    /// The statement for `buckets` and how to read its answer, for callers that send it in a
    /// pipeline with their own statements (one round trip).
    public func prepare(_ buckets: [RateLimitBucket], realm: String, settings: RealmSettings) -> RateLimitCheck {
        var counted: [RateLimitCheck.Counted] = []
        for bucket in buckets {
            let setting = bucket.policy.setting(in: settings)
            if let source = bucket.source ?? (bucket.policy.dimension == "ip" ? bucket.key : nil), setting.allows(sourceKey: source) { continue }
            counted.append(.init(bucket: bucket, setting: setting))
        }
        return RateLimitCheck(
            realm: realm, counted: counted, query: RateLimitsTable.count(counted, realm: realm, now: now(), keyed: { storedKey($0) }), trips: trips)
    }

    /// What the table holds for a bucket key: a keyed hash, 128 bits in base64url.
    func storedKey(_ key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(key.utf8), using: keying)
        return Base64URLText.encode(Array(Array(mac).prefix(16)))
    }

    /// Deletes buckets that have fully drained (run now and then; they refill to empty anyway).
    public func prune() async throws {
        try await RateLimitsTable.prune(before: now(), pool: pool)
    }
}

/// One policy's bucket for one request: the key it counts (a source network, a client id).
public struct RateLimitBucket: Sendable {
    public var policy: RateLimitPolicy
    public var key: String
    /// The request's source, for the policy's allowlist (defaults to `key` for per-source policies).
    public var source: String?
    /// The address a per-mailbox bucket counts (whose `key` is only its hash): when the
    /// bucket trips, its account, if any, is named in the record. Never stored.
    public var mailbox: String?

    public init(_ policy: RateLimitPolicy, key: String, source: String? = nil, mailbox: String? = nil) {
        self.policy = policy
        self.key = key
        self.source = source
        self.mailbox = mailbox
    }
}

/// A prepared count of one request's buckets, opaque outside the services: they send its
/// statement (alone, `RateLimiter.run`, or in one pipeline with a grant's own lookup) and
/// judge the answer.
public struct RateLimitCheck: Sendable {
    struct Counted: Sendable {
        var bucket: RateLimitBucket
        var setting: RateLimitSetting
    }

    public let realm: String
    let counted: [Counted]
    /// nil when no bucket is counted (every policy allowlisted for this source).
    let query: PQQuery?
    let trips: RateLimitTrips?

    private static let logger = Logger(label: "modgud.ratelimit")

    /// Runs the count on its own (one round trip; none when nothing is counted).
    func run(on pool: PQPool) async throws {
        guard let query else { return }
        try verdict(try await pool.query(query))
    }

    /// Throws `RateLimited` for the first rejecting bucket that is not log-only; records
    /// metrics and a notice for every rejecting bucket.
    func verdict(_ result: PQResult) throws {
        if let first = try record(result, silently: false) { throw first }
    }

    /// Whether the request passes; a rejection is recorded as in `verdict` and, when
    /// `silently`, logged as a drop the client is not told of.
    func admitted(_ result: PQResult, silently: Bool) throws -> Bool {
        try record(result, silently: silently) == nil
    }

    /// Metrics and notices for every rejecting bucket; the first enforced rejection.
    private func record(_ result: PQResult, silently: Bool) throws -> RateLimited? {
        let refusals = try RateLimitsTable.refusals(result)
        var first: RateLimited?
        for item in counted {
            guard let refusal = refusals.first(where: { $0.policy == item.bucket.policy.name }) else { continue }
            let (policy, wait) = (item.bucket.policy.name, refusal.wait)
            if item.setting.logOnly == true {
                Counter(label: "modgud_rate_limit_would_reject_total", dimensions: [("policy", policy)]).increment()
                Self.logger.notice("rate limit would reject (log-only)", metadata: ["policy": "\(policy)", "realm": "\(realm)"])
                continue
            }
            Counter(label: "modgud_rate_limit_rejections_total", dimensions: [("policy", policy)]).increment()
            if refusal.tripped {
                trips?.note(
                    .init(realm: realm, policy: policy, bucket: refusal.bucket, retryAfterSeconds: wait, mailbox: item.bucket.mailbox, origin: RequestOrigin.current))
            }
            Self.logger.notice(
                silently ? "rate limit dropped a request (the client got the uniform answer)" : "rate limit rejected a request (429)",
                metadata: ["policy": "\(policy)", "realm": "\(realm)", "retry_after_s": "\(wait)"])
            if first == nil {
                first = RateLimited(
                    policy: item.bucket.policy.policy, dimension: item.bucket.policy.dimension, retryAfterSeconds: wait, limit: item.setting.limit)
            }
        }
        return first
    }
}
