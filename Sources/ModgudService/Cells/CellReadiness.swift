/// `GET /health/ready` of an instance serving cells (issue 71): the balancer's question is
/// whether to send this instance traffic, and one cell's failover must not take the other cells'
/// realms out of the balancer with it. So the instance is ready unless it is draining or no cell
/// is ready; each cell's own verdict is in the checks (`cell.<name>`: `ok`, or its failing
/// checks), and a cell's realms answer 503 on their own while it is not ready.
public enum CellReadiness {
    /// The instance's report from its cells' reports (by cell name).
    public static func combine(_ cells: [String: ReadinessProbe.Report]) -> ReadinessProbe.Report {
        let draining = cells.values.contains { $0.checks["draining"] == "draining" }
        var checks = ["draining": draining ? "draining" : "ok"]
        for (name, report) in cells {
            let failing = report.checks.filter { $0.value != "ok" && $0.key != "draining" }.sorted { $0.key < $1.key }
            let verdict = failing.isEmpty ? "draining" : failing.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
            checks["cell." + name] = report.ready ? "ok" : verdict
        }
        return ReadinessProbe.Report(ready: !draining && cells.values.contains { $0.ready }, checks: checks)
    }
}
