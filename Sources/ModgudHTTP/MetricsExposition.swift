import Metrics
import Prometheus

/// The process's metrics backend: swift-metrics bootstrapped once with a Prometheus factory,
/// and the registry `GET /metrics` renders. `modgud serve`, `modgud dev` and the tests share
/// it (swift-metrics allows one bootstrap per process).
public enum MetricsExposition {
    /// Bootstraps swift-metrics on first use.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Database round trips are sub-millisecond to tens of milliseconds: finer buckets there.
        let fine: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
        ]
        factory.durationHistogramBuckets["modgud_event_append_seconds"] = fine
        factory.durationHistogramBuckets["modgud_db_pool_wait_seconds"] = fine
        // Appends per commit (group commit): every size up to 8, then coarser up to the cap.
        factory.valueHistogramBuckets["modgud_event_append_batch_size"] = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64]
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    /// `modgud_db_pool_wait_seconds`: how long callers waited for a pooled connection.
    public static func poolWaitObserver() -> @Sendable (Duration) -> Void {
        _ = registry
        let timer = Timer(label: "modgud_db_pool_wait_seconds")
        return { waited in timer.record(waited) }
    }
}
