import Hummingbird
import Logging
import Metrics
import ModgudService
import Synchronization

/// What the server records of every request, in one middleware (three async frames were
/// measurable per request: issue 27):
///
/// - the request id: the caller's `X-Request-Id` when it is a plain token (1 to 128 of
///   `A-Z a-z 0-9 . _ : -`), else one assigned; it is the events' correlation id and the log
///   lines' `hb.request.id`, and it is answered in `X-Request-Id`, so that an operator or a
///   test can find what one request wrote;
/// - the request's origin (`RequestOrigin.current`: its id, address and user agent), for the
///   records a service makes that no caller hands metadata to (a tripped rate limit);
/// - metrics: `modgud_http_requests_total{method,route,status}` and
///   `modgud_http_request_duration_seconds{method,route,status}` (a histogram), by route
///   template, never the raw path (ids would make unbounded label values);
/// - the access log: one line per request with method, path (no query: it may carry secrets;
///   an address segment reads `[address]`), status, duration and request id. Static documents
///   answered successfully (discovery, JWKS, app associations, health) are the exception:
///   balancers and apps fetch them many times a second, so they are counted and summarized in
///   one line per `StaticDocumentLog.window` instead (docs/operations/metrics.md, "Access log").
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = ModgudRequestContext

    private let handles = MetricHandles()
    private let staticDocuments = StaticDocumentLog()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var context = context
        context.userAgent = request.headers[.userAgent]
        if let given = request.headers[.requestID], Self.isPlainRequestID(given) {
            context.logger[metadataKey: "hb.request.id"] = .string(given)
        }
        var response: Response
        do {
            let origin = RequestOrigin(requestID: context.id, clientIP: context.peerAddress, userAgent: context.userAgent)
            response = try await RequestOrigin.$current.withValue(origin) { try await next(request, context) }
        } catch {
            observe(request, context, status: (error as? any HTTPResponseError)?.status.code ?? 500, started: started)
            throw error
        }
        response.headers[.requestID] = context.id
        observe(request, context, status: response.status.code, started: started)
        return response
    }

    private func observe(_ request: Request, _ context: Context, status: Int, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let method = request.method.rawValue
        handles.record(MetricHandles.Key(method: method, route: context.endpointPath ?? "unmatched", status: status), elapsed: elapsed)
        if request.method == .get, status < 400, let document = StaticDocumentLog.Document(rawValue: request.uri.path) {
            staticDocuments.count(document, logger: context.logger)
            return
        }
        let milliseconds = elapsed.milliseconds
        context.logger.info(
            "request",
            metadata: [
                "method": .string(method), "path": .string(Self.loggedPath(request.uri.path)), "status": .string(String(status)),
                "duration_ms": .string(String((milliseconds * 100).rounded() / 100)),
            ])
    }

    /// Whether a caller's request id may stand in logs and events as it is: a short token,
    /// nothing that could forge a log line or carry personal data in bulk.
    static func isPlainRequestID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    /// The path as logged: a segment holding an address (the admin API takes one for a user)
    /// reads `[address]`, so logs hold no personal data (issue 13).
    static func loggedPath(_ path: String) -> String {
        guard mayHoldAddress(path.utf8) else { return path }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.contains("@") || $0.lowercased().contains("%40") ? "[address]" : String($0) }
            .joined(separator: "/")
    }

    /// `@` or `%40`: a byte scan, since every request's path passes here.
    private static func mayHoldAddress(_ bytes: String.UTF8View) -> Bool {
        var percent = 0
        for byte in bytes {
            if byte == UInt8(ascii: "@") { return true }
            switch (percent, byte) {
            case (_, UInt8(ascii: "%")): percent = 1
            case (1, UInt8(ascii: "4")): percent = 2
            case (2, UInt8(ascii: "0")): return true
            default: percent = 0
            }
        }
        return false
    }
}

/// Metric handles by method, route and status: the factory's own lookup takes a lock and
/// builds labels on every call.
private final class MetricHandles: Sendable {
    struct Key: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private let handles = Mutex<[Key: (Counter, Timer)]>([:])

    func record(_ key: Key, elapsed: Duration) {
        let (counter, timer) = handles.withLock { cache in
            if let pair = cache[key] { return pair }
            let dimensions = [("method", key.method), ("route", key.route), ("status", String(key.status))]
            let pair = (
                Counter(label: "modgud_http_requests_total", dimensions: dimensions),
                Timer(label: "modgud_http_request_duration_seconds", dimensions: dimensions)
            )
            cache[key] = pair
            return pair
        }
        counter.increment()
        timer.record(elapsed)
    }
}
