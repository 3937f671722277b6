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
                "method": .string(request.method.rawValue), "path": .string(Self.loggedPath(request.uri.path)), "status": .string(String(status)),
                "duration_ms": .string(String((milliseconds * 100).rounded() / 100)),
            ])
    }

    /// The path as logged: a segment holding an address (the admin API takes one for a user)
    /// reads `[address]`, so logs hold no personal data (issue 13).
    static func loggedPath(_ path: String) -> String {
        guard mayHoldAddress(path.utf8) else { return path }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.contains("@") || $0.lowercased().contains("%40") ? "[address]" : String($0) }
            .joined(separator: "/")
    }

    /// `@`, or `%40` in either case: a cheap scan, since every request's path passes here.
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
