import Hummingbird
import Logging

/// One log line per request: method, path (no query: it may carry secrets), status, duration,
/// request id. With the JSON log handler of `modgud serve` each line is a JSON object.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = ModgudRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            log(request, context, status: (error as? any HTTPResponseError)?.status.code ?? 500, started: started)
            throw error
        }
        log(request, context, status: response.status.code, started: started)
        return response
    }

    private func log(_ request: Request, _ context: Context, status: Int, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(status)",
                "duration_ms": "\((milliseconds * 100).rounded() / 100)",
            ])
    }
}
