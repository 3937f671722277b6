import Hummingbird
import Metrics
import Synchronization

/// Counts every request and times it, by route template (never the raw path: ids would make
/// unbounded label values), method and status:
/// `modgud_http_requests_total{method,route,status}` and
/// `modgud_http_request_duration_seconds{method,route,status}` (a histogram).
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = ModgudRequestContext

    private struct Key: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    /// Metric handles by key: the factory's own lookup takes a lock and builds labels.
    private final class Handles: Sendable {
        let counters = Mutex<[Key: Counter]>([:])
        let timers = Mutex<[Key: Timer]>([:])

        func counter(_ key: Key) -> Counter {
            counters.withLock { cache in
                if let counter = cache[key] { return counter }
                let counter = Counter(
                    label: "modgud_http_requests_total",
                    dimensions: [("method", key.method), ("route", key.route), ("status", String(key.status))])
                cache[key] = counter
                return counter
            }
        }

        func timer(_ key: Key) -> Timer {
            timers.withLock { cache in
                if let timer = cache[key] { return timer }
                let timer = Timer(
                    label: "modgud_http_request_duration_seconds",
                    dimensions: [("method", key.method), ("route", key.route), ("status", String(key.status))])
                cache[key] = timer
                return timer
            }
        }
    }

    private let handles = Handles()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let status: Int
        let response: Response
        do {
            response = try await next(request, context)
            status = response.status.code
        } catch {
            record(request, context, status: (error as? any HTTPResponseError)?.status.code ?? 500, started: started)
            throw error
        }
        record(request, context, status: status, started: started)
        return response
    }

    private func record(_ request: Request, _ context: Context, status: Int, started: ContinuousClock.Instant) {
        let method = request.method.rawValue
        let route = context.endpointPath ?? "unmatched"
        let key = Key(method: method, route: route, status: status)
        handles.counter(key).increment()
        handles.timer(key).record(ContinuousClock.now - started)
    }
}

extension Timer {
    /// Records a duration (swift-metrics takes nanoseconds).
    func record(_ duration: Duration) {
        recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
