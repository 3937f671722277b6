@testable import ModgudCLI
import XCTest

/// `modgud bench load` reads the server's round trips and group commit's batch sizes from
/// Prometheus's text format (issue 27).
final class ServerMetricsTests: XCTestCase {
    func exposition(_ buckets: [(String, Int)], sum: Int, roundTrips: Int) -> String {
        var text = "# TYPE modgud_event_append_batch_size histogram\n"
        for (bound, count) in buckets { text += "modgud_event_append_batch_size_bucket{le=\"\(bound)\"} \(count)\n" }
        text += "modgud_event_append_batch_size_sum \(sum)\nmodgud_event_append_batch_size_count \(buckets.last?.1 ?? 0)\n"
        text += "# TYPE modgud_db_round_trips counter\nmodgud_db_round_trips \(roundTrips)\n"
        return text
    }

    func testTheDistributionIsTheDifferenceBetweenTwoSamples() {
        let before = ServerMetrics(exposition: exposition([("1.0", 10), ("2.0", 10), ("4.0", 10), ("8.0", 10), ("+Inf", 10)], sum: 10, roundTrips: 50))
        // Since then: 4 commits of 1, 3 of 2, 2 of 3 or 4, 1 of 5–8: 24 appends in 10 commits.
        let after = ServerMetrics(exposition: exposition([("1.0", 14), ("2.0", 17), ("4.0", 19), ("8.0", 20), ("+Inf", 20)], sum: 34, roundTrips: 80))
        XCTAssertEqual(after.roundTrips, 80)
        XCTAssertEqual(ServerMetrics.batches(from: before, to: after), "2.4/2/8", "mean 24/10, median in the bucket of 2, largest up to 8")
    }

    func testNoCommitsPrintADash() {
        let sample = ServerMetrics(exposition: exposition([("1.0", 3), ("+Inf", 3)], sum: 3, roundTrips: 1))
        XCTAssertEqual(ServerMetrics.batches(from: sample, to: sample), "-")
        XCTAssertEqual(ServerMetrics.batches(from: sample, to: ServerMetrics(exposition: "")), "-")
    }
}
