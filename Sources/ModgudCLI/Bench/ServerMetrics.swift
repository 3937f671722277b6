/// What `modgud bench load` reads from the server's `/metrics`: its round trips, and how
/// many appends its commits carried (group commit, issue 27).
struct ServerMetrics: Sendable {
    /// `modgud_db_round_trips`.
    var roundTrips: Int?
    /// `modgud_event_append_batch_size`: cumulative commits per bucket bound, the bound's order.
    var batchBuckets: [(bound: Double, commits: Int)] = []
    /// Appends committed in all (the histogram's sum).
    var batchedAppends = 0

    /// Parses Prometheus's text exposition; unknown lines are ignored.
    init(exposition text: String) {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let name = line[..<space]
            if name == "modgud_db_round_trips" {
                roundTrips = Int(value)
            } else if name == "modgud_event_append_batch_size_sum" {
                batchedAppends = Int(value)
            } else if name.hasPrefix("modgud_event_append_batch_size_bucket{le=\""), let bound = Self.bound(name) {
                batchBuckets.append((bound, Int(value)))
            }
        }
        batchBuckets.sort { $0.bound < $1.bound }
    }

    private static func bound(_ name: Substring) -> Double? {
        let quoted = name.split(separator: "\"")
        guard quoted.count >= 2 else { return nil }
        return quoted[1] == "+Inf" ? .infinity : Double(quoted[1])
    }

    /// Appends per commit between two samples: mean, median and largest (as bucket bounds).
    static func batches(from before: ServerMetrics, to after: ServerMetrics) -> String {
        let counts = after.batchBuckets.map { bucket in
            (bucket.bound, bucket.commits - (before.batchBuckets.first { $0.bound == bucket.bound }?.commits ?? 0))
        }
        guard let total = counts.last?.1, total > 0 else { return "-" }
        let mean = Double(after.batchedAppends - before.batchedAppends) / Double(total)
        let median = counts.first { $0.1 * 2 >= total }?.0 ?? .infinity
        // The smallest bound holding every commit: the largest batch, to its bucket.
        let largest = counts.first { $0.1 == total }?.0 ?? .infinity
        func bound(_ value: Double) -> String { value.isFinite ? String(Int(value)) : "64+" }
        return String(format: "%.1f", mean) + "/" + bound(median) + "/" + bound(largest)
    }
}
