import Foundation

/// One scenario's line in the `modgud bench load` table: rates and latencies from the
/// client's side, and per successful operation what the server and the database spent.
struct LoadReport {
    let scenario: LoadScenario
    let statistics: LoadStatistics
    let seconds: Double
    let before: LoadEnvironment.Sample
    let after: LoadEnvironment.Sample
    /// The most events the audit log's integrator trailed by while the run went on.
    var auditLag: Int? = nil
    /// The floor's rate in this run (issue 49): the line prints its own as a fraction of it.
    var floorRate: Double? = nil

    /// Successful operations per second.
    var rate: Double { Double(statistics.succeeded) / max(seconds, 0.001) }

    static let columns: [(String, Int)] = [
        ("scenario", 20), ("ok/s", 9), ("p50 ms", 8), ("p99 ms", 8), ("errors", 7), ("xact/op", 8), ("rt/op", 7), ("stmt/op", 8),
        ("fsync/op", 9), ("WAL B/op", 9), ("srv ms/op", 10), ("srv cs/op", 10), ("pg ms/op", 9), ("gen ms/op", 10), ("RSS MiB", 8),
        ("appends/commit", 15), ("audit lag", 10), ("of floor", 9),
    ]

    static var header: String {
        columns.enumerated().map { index, column in index == 0 ? column.0.padding(column.1) : column.0.padding(column.1, left: true) }
            .joined()
    }

    var line: String {
        let ops = Double(max(statistics.succeeded, 1))
        func per(_ delta: Int?) -> String { delta.map { String(format: "%.2f", Double($0) / ops) } ?? "-" }
        func perMilliseconds(_ delta: Double?) -> String { delta.map { String(format: "%.3f", $0 * 1000 / ops) } ?? "-" }
        let values: [String] = [
            scenario.rawValue,
            String(format: "%.0f", rate),
            String(format: "%.2f", statistics.percentile(0.5)),
            String(format: "%.2f", statistics.percentile(0.99)),
            String(statistics.failed),
            per(after.database.transactions - before.database.transactions),
            per(after.roundTrips.flatMap { a in before.roundTrips.map { a - $0 } }),
            per(after.database.statements.flatMap { a in before.database.statements.map { a - $0 } }),
            per(after.database.walSyncs - before.database.walSyncs),
            String(format: "%.0f", Double(after.database.walBytes - before.database.walBytes) / ops),
            perMilliseconds(after.serverCPUSeconds.flatMap { a in before.serverCPUSeconds.map { a - $0 } }),
            // Thread hops: the server's context switches per operation.
            per(after.serverContextSwitches.flatMap { a in before.serverContextSwitches.map { a - $0 } }),
            perMilliseconds(after.databaseCPUSeconds.flatMap { a in before.databaseCPUSeconds.map { a - $0 } }),
            perMilliseconds(after.generatorCPUSeconds.flatMap { a in before.generatorCPUSeconds.map { a - $0 } }),
            after.serverMemory.map { String(format: "%.0f", Double($0.resident) / 1024) } ?? "-",
            // Group commit's batches: mean/median/largest appends per commit.
            before.server.flatMap { before in after.server.map { ServerMetrics.batches(from: before, to: $0) } } ?? "-",
            auditLag.map(String.init) ?? "-",
            floorRate.map { String(format: "%.2f", rate / max($0, 0.001)) } ?? "-",
        ]
        var text = ""
        for (index, (value, column)) in zip(values, Self.columns).enumerated() {
            text += index == 0 ? value.padding(column.1) : value.padding(column.1, left: true)
        }
        if statistics.failed > 0 {
            text += "  statuses " + statistics.statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
        }
        return text
    }

    /// The `count` statements with the most calls per operation during the run, each with the
    /// microseconds PostgreSQL spent planning and executing it per operation, after a total line.
    func topStatements(_ count: Int) -> [String] {
        guard count > 0 else { return [] }
        let ops = Double(max(statistics.succeeded, 1))
        let deltas = after.database.calls.compactMap { query, cost -> (String, Int, Double)? in
            let earlier = before.database.calls[query]
            let calls = cost.calls - (earlier?.calls ?? 0)
            return calls > 0 ? (query, calls, cost.milliseconds - (earlier?.milliseconds ?? 0)) : nil
        }
        let executing = deltas.reduce(0) { $0 + $1.2 } * 1000 / ops
        let total = "    calls/op  exec µs/op (all statements: \(String(format: "%.1f", executing)) µs/op)"
        return [total] + deltas.sorted { $0.1 > $1.1 }.prefix(count).map { query, calls, milliseconds in
            let flat = query.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            return "    " + String(format: "%8.2f  %10.1f", Double(calls) / ops, milliseconds * 1000 / ops) + "  " + String(flat.prefix(140))
        }
    }
}
