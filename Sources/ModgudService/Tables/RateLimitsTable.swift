import Foundation
import ModgudDomain
import PQ

/// The one home of the `rate_limits` table's SQL (docs/architecture.md, "House habits"): the
/// GCRA upsert `RateLimiter` prepares, how its answer reads, and the pruning.
enum RateLimitsTable {
    /// One upsert for every bucket (their (policy, key) pairs are distinct: one per policy).
    static func count(_ counted: [RateLimitCheck.Counted], realm: String, now: Date, keyed: (String) -> String) -> PQQuery? {
        guard !counted.isEmpty else { return nil }
        // $1 realm, $2 now; then policy, key, interval, tolerance per bucket.
        var binds: [PQBind] = [realm.pqBind, now.pqBind]
        binds.reserveCapacity(2 + 4 * counted.count)
        for item in counted {
            let interval = Double(item.setting.windowSeconds) / Double(max(1, item.setting.limit))
            let tolerance = interval * Double(max(0, max(1, item.setting.burst) - 1))
            binds += [item.bucket.policy.name.pqBind, keyed(item.bucket.key).pqBind, interval.pqBind, tolerance.pqBind]
        }
        let sql = counted.count < countTexts.count ? countTexts[counted.count] : countSQL(rows: counted.count)
        return PQQuery(sql, binds: binds)
    }

    /// The count's text for 0 to 7 buckets, built once: it depends on the number of buckets
    /// only, and building it per request was a measurable part of a refresh (issue 49).
    private static let countTexts: [String] = (0..<8).map { countSQL(rows: $0) }

    /// The count's text for `rows` buckets: $1 realm, $2 now; then policy, key, interval and
    /// tolerance per bucket.
    static func countSQL(rows count: Int) -> String {
        let rows = (0..<count).map { index in
            let first = 3 + 4 * index
            return "($1, $\(first), $\(first + 1), $2 + make_interval(secs => $\(first + 2)), true, $\(first + 2), $\(first + 3))"
        }
        // Unchanged setting (the hot path): plain GCRA on the stored timestamp. Changed: the
        // stored debt in seconds, re-timed from the interval it was stored with to the current
        // one and capped at a full bucket of the current setting (see the type's doc). With an
        // unchanged setting the two agree, since a bucket never holds more than a full bucket.
        let unchanged = "r.interval_seconds = EXCLUDED.interval_seconds AND r.tolerance_seconds = EXCLUDED.tolerance_seconds"
        let debt = """
            least(extract(epoch FROM greatest(r.tat, $2) - $2) * EXCLUDED.interval_seconds / greatest(r.interval_seconds, 1e-9),
                  EXCLUDED.tolerance_seconds + EXCLUDED.interval_seconds)
            """
        let fits = "greatest(r.tat, $2) - $2 <= make_interval(secs => EXCLUDED.tolerance_seconds)"
        let allowed = "CASE WHEN \(unchanged) THEN \(fits) ELSE \(debt) <= EXCLUDED.tolerance_seconds END"
        // A refusal trips the bucket (its event is recorded: `RateLimitTrips`) unless it
        // tripped within the last `RateLimitLog.tripInterval`.
        let trips = """
            NOT (\(allowed)) AND (r.tripped_at IS NULL OR r.tripped_at <= $2 - make_interval(secs => \(Int(RateLimitLog.tripInterval))))
            """
        return """
            INSERT INTO rate_limits AS r (realm_id, policy, bucket_key, tat, allowed, interval_seconds, tolerance_seconds)
            VALUES \(rows.joined(separator: ", "))
            ON CONFLICT (realm_id, policy, bucket_key) DO UPDATE SET
                allowed = \(allowed),
                tripped_at = CASE WHEN \(trips) THEN $2 ELSE r.tripped_at END,
                just_tripped = \(trips),
                tat = CASE WHEN \(unchanged) THEN
                    CASE WHEN \(fits) THEN greatest(r.tat, $2) + make_interval(secs => EXCLUDED.interval_seconds) ELSE r.tat END
                ELSE $2 + make_interval(secs => \(debt)
                    + CASE WHEN \(debt) <= EXCLUDED.tolerance_seconds THEN EXCLUDED.interval_seconds ELSE 0 END) END,
                interval_seconds = EXCLUDED.interval_seconds, tolerance_seconds = EXCLUDED.tolerance_seconds
            RETURNING policy, allowed, extract(epoch FROM tat - $2)::float8, tolerance_seconds, just_tripped, bucket_key
            """
    }

    /// Deletes buckets that have fully drained before `cutoff`.
    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM rate_limits WHERE tat < \(cutoff)")
    }

    /// A rejecting row of an answer.
    struct Refusal {
        var policy: String
        /// Seconds until a request would pass.
        var wait: Int
        /// Whether this refusal tripped the bucket (the first in a `RateLimitLog.tripInterval`).
        var tripped: Bool
        /// The bucket's stored key.
        var bucket: String
    }

    /// The rejecting rows of an answer.
    static func refusals(_ result: PQResult) throws -> [Refusal] {
        try result.rows.compactMap { row in
            guard try !row.decode(Bool.self, at: 1) else { return nil }
            let ahead = try row.decode(Double.self, at: 2)
            let tolerance = try row.decode(Double.self, at: 3)
            return Refusal(
                policy: try row.decode(String.self, at: 0), wait: max(1, Int((ahead - tolerance).rounded(.up))),
                tripped: try row.decode(Bool.self, at: 4), bucket: try row.decode(String.self, at: 5))
        }
    }
}
