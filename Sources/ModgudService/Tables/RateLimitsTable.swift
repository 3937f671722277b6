import Foundation
import ModgudDomain
import PQ

/// The one home of the rate-limit tables' SQL (docs/architecture.md, "House habits"): the
/// GCRA upsert `RateLimiter` prepares, how its answer reads, and the pruning. Durable policies'
/// buckets (`RateLimitPolicy.durable`) live in the logged `rate_limits_durable`, the others in
/// the UNLOGGED `rate_limits` (migration 0027); a request counting both kinds counts them in one
/// statement, two inserts in a `WITH`, still one round trip.
enum RateLimitsTable {
    static let volatileTable = "rate_limits"
    static let durableTable = "rate_limits_durable"

    /// One statement for every bucket (their (policy, key) pairs are distinct: one per policy).
    static func count(_ counted: [RateLimitCheck.Counted], realm: String, now: Date, keyed: (String) -> String) -> PQQuery? {
        guard !counted.isEmpty else { return nil }
        // $1 realm, $2 now; then policy, key, interval, tolerance per bucket: the volatile
        // buckets first, then the durable ones.
        let ordered = counted.filter { !$0.bucket.policy.durable } + counted.filter { $0.bucket.policy.durable }
        var binds: [PQBind] = [realm.pqBind, now.pqBind]
        binds.reserveCapacity(2 + 4 * ordered.count)
        for item in ordered {
            let interval = Double(item.setting.windowSeconds) / Double(max(1, item.setting.limit))
            let tolerance = interval * Double(max(0, max(1, item.setting.burst) - 1))
            binds += [item.bucket.policy.name.pqBind, keyed(item.bucket.key).pqBind, interval.pqBind, tolerance.pqBind]
        }
        let durable = counted.count { $0.bucket.policy.durable }
        let volatile = counted.count - durable
        let sql = volatile < countTexts.count && durable < countTexts[0].count ? countTexts[volatile][durable] : countSQL(volatile: volatile, durable: durable)
        return PQQuery(sql, binds: binds)
    }

    /// The count's text for 0 to 7 volatile and 0 to 2 durable buckets, built once: it depends
    /// on the numbers of buckets only, and building it per request was a measurable part of a
    /// refresh (issue 49).
    private static let countTexts: [[String]] = (0..<8).map { volatile in (0..<3).map { countSQL(volatile: volatile, durable: $0) } }

    /// The count's text: $1 realm, $2 now; then policy, key, interval and tolerance per bucket,
    /// `volatile` buckets first, then `durable` ones.
    static func countSQL(volatile: Int, durable: Int) -> String {
        switch (volatile, durable) {
        case (_, 0): return upsert(into: volatileTable, rows: 0..<volatile)
        case (0, _): return upsert(into: durableTable, rows: 0..<durable)
        default:
            return """
                WITH v AS (\(upsert(into: volatileTable, rows: 0..<volatile))), d AS (\(upsert(into: durableTable, rows: volatile..<(volatile + durable))))
                SELECT * FROM v UNION ALL SELECT * FROM d
                """
        }
    }

    /// The GCRA upsert of the buckets `rows` (their bind positions) into `table`.
    private static func upsert(into table: String, rows indices: Range<Int>) -> String {
        let rows = indices.map { index in
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
            INSERT INTO \(table) AS r (realm_id, policy, bucket_key, tat, allowed, interval_seconds, tolerance_seconds)
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

    /// Deletes buckets that have fully drained before `cutoff`, in both tables.
    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM rate_limits WHERE tat < \(cutoff)")
        _ = try await pool.query("DELETE FROM rate_limits_durable WHERE tat < \(cutoff)")
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
