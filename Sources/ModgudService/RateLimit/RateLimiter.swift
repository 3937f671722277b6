import Foundation
import Logging
import Metrics
import ModgudDomain
import PQ

/// Rate limits counted in PostgreSQL, so every instance shares them (SPEC.md section 0).
///
/// GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp): each key
/// stores its theoretical arrival time `tat`; a request at `now` is allowed when
/// `max(tat, now) - now <= (burst - 1) * interval` and then moves `tat` on by one interval
/// (`window / limit`). One upsert decides, so concurrent requests on several instances
/// cannot overspend.
public struct RateLimiter: Sendable {
    public let pool: PQPool
    let now: @Sendable () -> Date

    public init(pool: PQPool, now: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.now = now
    }

    /// Counts one request; throws `RateLimited` when over the limit (the request is not counted then).
    /// - Parameter source: the request's source key, for the policy's allowlist (defaults to
    ///   `key` for per-source policies).
    public func check(_ policy: RateLimitPolicy, key: String, realm: String, settings: RealmSettings, source: String? = nil) async throws {
        let setting = policy.setting(in: settings)
        if let source = source ?? (policy.dimension == "ip" ? key : nil), setting.allows(sourceKey: source) { return }
        guard let wait = try await take(policy, key: key, realm: realm, settings: settings) else { return }
        if setting.logOnly == true {
            Counter(label: "modgud_rate_limit_would_reject_total", dimensions: [("policy", policy.name)]).increment()
            Self.logger.notice("rate limit would reject (log-only)", metadata: ["policy": "\(policy.name)", "realm": "\(realm)"])
            return
        }
        Counter(label: "modgud_rate_limit_rejections_total", dimensions: [("policy", policy.name)]).increment()
        throw RateLimited(policy: policy.policy, dimension: policy.dimension, retryAfterSeconds: wait)
    }

    private static let logger = Logger(label: "modgud.ratelimit")

    /// Counts one request; nil when allowed, else the seconds until one would be.
    public func take(_ policy: RateLimitPolicy, key: String, realm: String, settings: RealmSettings) async throws -> Int? {
        let setting = policy.setting(in: settings)
        let interval = Double(setting.windowSeconds) / Double(max(1, setting.limit))
        let tolerance = interval * Double(max(0, max(1, setting.burst) - 1))
        let time = now()
        let row = try await pool.query(
            """
            INSERT INTO rate_limits AS r (realm_id, policy, bucket_key, tat, allowed)
            VALUES (\(realm), \(policy.name), \(key), \(time) + make_interval(secs => \(interval)), true)
            ON CONFLICT (realm_id, policy, bucket_key) DO UPDATE SET
                allowed = greatest(r.tat, \(time)) - \(time) <= make_interval(secs => \(tolerance)),
                tat = CASE WHEN greatest(r.tat, \(time)) - \(time) <= make_interval(secs => \(tolerance))
                           THEN greatest(r.tat, \(time)) + make_interval(secs => \(interval)) ELSE r.tat END
            RETURNING allowed, extract(epoch FROM tat - \(time))::float8
            """
        ).first
        guard let row, try !row.decode(Bool.self, at: 0) else { return nil }
        let ahead = try row.decode(Double.self, at: 1)
        return max(1, Int((ahead - tolerance).rounded(.up)))
    }

    /// Deletes buckets that have fully drained (run now and then; they refill to empty anyway).
    public func prune() async throws {
        _ = try await pool.query("DELETE FROM rate_limits WHERE tat < \(now())")
    }
}
