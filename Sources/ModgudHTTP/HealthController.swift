import Hummingbird
import Metrics
import ModgudService
import Prometheus

/// `GET /health/live`, `GET /health/ready` and `GET /metrics`: for load balancers,
/// orchestrators and Prometheus. None of them needs a realm (they answer on any host).
struct HealthController: Sendable {
    let readiness: ReadinessProbe
    /// The registry `/metrics` renders; nil: no `/metrics` route.
    let metrics: PrometheusCollectorRegistry?

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/health/live") { _, _ in "ok" }
        router.get("/health/ready", use: ready)
        if metrics != nil { router.get("/metrics", use: render) }
    }

    /// 200 when ready, 503 otherwise (draining, database unreachable, migrations pending, a
    /// projection stalled), with each check's verdict: `{ "status", "checks": { … } }`.
    func ready(_ request: Request, context: ModgudRequestContext) async -> Response {
        ReadinessResponse.render(await readiness.check())
    }

    /// The Prometheus text exposition format (version 0.0.4).
    func render(_ request: Request, context: ModgudRequestContext) async -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        headers[.cacheControl] = "no-store"
        // Read at scrape time: a process-wide atomic, no database work.
        Gauge(label: "modgud_db_round_trips").record(StoreFailure.roundTrips)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics?.emitToBuffer() ?? [])))
    }
}
