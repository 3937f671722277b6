import Hummingbird
import ModgudService

/// Answers for failures that are not the request's fault. The error itself goes to the log,
/// never to the client.
///
/// While the database is unreachable (restarting, failing over, out of connections) the
/// answer is 503 with `Retry-After`, so clients and load balancers back off and retry: the
/// instance recovers on its own once the database is back. Anything else is a 500.
enum ServerFailure {
    /// What a client should wait before retrying while the database is unavailable.
    static let retryAfterSeconds = 2

    /// A problem (RFC 7807): `Service.Unavailable` (503) or `Server.Error` (500).
    static func problem(_ error: any Error, context: ModgudRequestContext, endpoint: String) -> Response {
        if StoreFailure.meansDatabaseUnavailable(error) {
            log(error, context: context, endpoint: endpoint, unavailable: true)
            return withRetryAfter(
                Problem.response("Service.Unavailable", status: 503, detail: "The service is temporarily unavailable; retry shortly."))
        }
        log(error, context: context, endpoint: endpoint, unavailable: false)
        return Problem.response("Server.Error", status: 500, detail: "Try again later.")
    }

    /// An OAuth error body (RFC 6749 section 5.2 shape): `temporarily_unavailable` (503) or
    /// `server_error` (500), with `Cache-Control: no-store` like every token-endpoint answer.
    static func oauth(_ error: any Error, context: ModgudRequestContext, endpoint: String) -> Response {
        if StoreFailure.meansDatabaseUnavailable(error) {
            log(error, context: context, endpoint: endpoint, unavailable: true)
            return withRetryAfter(
                OAuthResponses.json(
                    OAuthResponses.ErrorBody(
                        error: "temporarily_unavailable", errorDescription: "The service is temporarily unavailable; retry shortly."),
                    status: .serviceUnavailable))
        }
        log(error, context: context, endpoint: endpoint, unavailable: false)
        return OAuthResponses.json(
            OAuthResponses.ErrorBody(error: "server_error", errorDescription: "Try again later."), status: .internalServerError)
    }

    private static func withRetryAfter(_ response: Response) -> Response {
        var response = response
        response.headers[.retryAfter] = String(retryAfterSeconds)
        return response
    }

    static func log(_ error: any Error, context: ModgudRequestContext, endpoint: String, unavailable: Bool) {
        if unavailable {
            context.logger.warning("database unavailable", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
        } else {
            context.logger.error("request failed", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
        }
    }
}
