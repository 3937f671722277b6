import EventStorePostgres
import Metrics
import PQ

/// Gauges that describe state rather than events, read now and then (every 15 s by the
/// maintenance loop) rather than on each scrape, so scrapes never load the database:
///
/// - `modgud_projection_lag_events{projection}`, `modgud_projection_failing_events{projection}`,
///   `modgud_projection_parked_events{projection}`;
/// - `modgud_audit_log_lag_events`: events committed and not yet leaves of the audit log;
/// - `modgud_mail_outbox_messages{state="pending"|"dead"}`;
/// - `modgud_ssf_outbox_sets{state="pending"|"dead"}`: SETs waiting for delivery or acknowledgement, and given up;
/// - `modgud_db_pool_connections{state="open"|"idle"|"in_use"}`, `modgud_db_pool_waiting`.
public struct MetricsSampler: Sendable {
    let pool: PQPool
    public let outbox: MailOutbox?
    public let projections: [any SQLProjection]

    public init(pool: PQPool, outbox: MailOutbox?, projections: [any SQLProjection] = ProjectionCatalog.asynchronous) {
        self.pool = pool
        self.outbox = outbox
        self.projections = projections
    }

    /// Pool gauges need no database; the rest do, and throw when it is unreachable.
    public func sample() async throws {
        let statistics = pool.statistics
        Gauge(label: "modgud_db_pool_connections", dimensions: [("state", "open")]).record(statistics.open)
        Gauge(label: "modgud_db_pool_connections", dimensions: [("state", "idle")]).record(statistics.idle)
        Gauge(label: "modgud_db_pool_connections", dimensions: [("state", "in_use")]).record(statistics.open - statistics.idle)
        Gauge(label: "modgud_db_pool_waiting").record(statistics.waiting)
        for projection in projections {
            let status = try await ProjectionStatus.read(projection, pool: pool)
            let dimensions = [("projection", projection.name)]
            Gauge(label: "modgud_projection_lag_events", dimensions: dimensions).record(status.lag)
            Gauge(label: "modgud_projection_failing_events", dimensions: dimensions).record(status.failing)
            Gauge(label: "modgud_projection_parked_events", dimensions: dimensions).record(status.parked)
        }
        Gauge(label: "modgud_audit_log_lag_events").record(try await AuditLogReader(pool: pool).lag())
        var sets = ["pending": 0, "dead": 0]
        for row in try await pool.query(SignalOutboxTable.counts).rows { sets[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1) }
        for (state, count) in sets { Gauge(label: "modgud_ssf_outbox_sets", dimensions: [("state", state)]).record(count) }
        if let outbox {
            let counts = try await outbox.counts()
            Gauge(label: "modgud_mail_outbox_messages", dimensions: [("state", "pending")]).record(counts.pending)
            Gauge(label: "modgud_mail_outbox_messages", dimensions: [("state", "dead")]).record(counts.dead)
        }
    }
}
