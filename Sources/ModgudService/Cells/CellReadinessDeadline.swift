import Synchronization

extension CellReadiness {
    /// How long one cell's readiness may take before the instance's answer counts it as not
    /// ready: below a balancer's check timeout (HAProxy's `timeout check 2s` in ops/), so that a
    /// cell whose pool is stuck in a failover never makes the instance's check late, which the
    /// balancer would read as the whole instance down.
    public static let perCellLimit: Duration = .seconds(1)

    /// The probe's report, or a not-ready one once `limit` has passed (the check goes on
    /// unawaited and its answer is cached for the next call).
    public static func check(_ probe: ReadinessProbe, within limit: Duration = perCellLimit) async -> ReadinessProbe.Report {
        let late = ReadinessProbe.Report(ready: false, checks: ["database": "no answer within \(limit)"])
        let answered = Mutex(false)
        return await withCheckedContinuation { continuation in
            let resume: @Sendable (ReadinessProbe.Report) -> Void = { report in
                let first = answered.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: report) }
            }
            Task { resume(await probe.check()) }
            Task {
                try? await Task.sleep(for: limit)
                resume(late)
            }
        }
    }
}
