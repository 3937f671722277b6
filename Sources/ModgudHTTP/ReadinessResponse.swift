import Hummingbird
import ModgudService

/// The answer of `GET /health/ready`: 200 when ready, 503 with `Retry-After` otherwise, and each
/// check's verdict, `{ "status", "checks": { … } }` (one instance's, or an instance's over its cells).
enum ReadinessResponse {
    static func render(_ report: ReadinessProbe.Report) -> Response {
        var response = OAuthResponses.json(
            Body(status: report.ready ? "ready" : "unavailable", checks: report.checks), status: report.ready ? .ok : .serviceUnavailable)
        if !report.ready { response.headers[.retryAfter] = "1" }
        return response
    }

    struct Body: Encodable {
        var status: String
        var checks: [String: String]
    }
}
