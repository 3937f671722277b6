/// What one connection saw in a load run: a latency per request and a count per status.
struct LoadStatistics: Sendable {
    var latencies: [Double] = []
    var statuses: [String: Int] = [:]
    var succeeded = 0

    mutating func record(status: Int, expected: Int, milliseconds: Double) {
        latencies.append(milliseconds)
        statuses[String(status), default: 0] += 1
        if status == expected { succeeded += 1 }
    }

    mutating func recordTransportError() {
        statuses["error", default: 0] += 1
    }

    mutating func merge(_ other: LoadStatistics) {
        latencies += other.latencies
        succeeded += other.succeeded
        for (status, count) in other.statuses { statuses[status, default: 0] += count }
    }

    var requests: Int { statuses.values.reduce(0, +) }
    var failed: Int { requests - succeeded }

    /// The latency at quantile `q` (0…1) in milliseconds, by nearest rank.
    func percentile(_ q: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
