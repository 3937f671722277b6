import Foundation
import HTTPTypes
import Hummingbird

/// How console answers are built: pages with their security headers, redirects after a form
/// (POST, redirect, GET), and the two static files.
enum ConsoleResponse {
    /// No script or style but the console's own files, no inline code (htmx is configured not
    /// to inject its indicator style), no framing, forms only to the console itself.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static func securityHeaders() -> HTTPFields {
        var headers = HTTPFields()
        headers[HTTPField.Name("Content-Security-Policy")!] = contentSecurityPolicy
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        headers[.cacheControl] = "no-store"
        return headers
    }

    /// An HTML page; `started` gives the Server-Timing header (the server's time for the page).
    static func page(_ html: String, status: HTTPResponse.Status = .ok, started: ContinuousClock.Instant, cookie: String? = nil) -> Response {
        var headers = securityHeaders()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[HTTPField.Name("Server-Timing")!] = serverTiming(since: started)
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// 303 See Other to a console path.
    static func redirect(_ path: String, cookie: String? = nil) -> Response {
        var headers = securityHeaders()
        headers[.location] = path
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    static func file(_ bytes: [UInt8], contentType: String) -> Response {
        var headers = securityHeaders()
        headers[.contentType] = contentType
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `app;dur=1.23`: milliseconds, for the browser's network panel and the console benchmark.
    static func serverTiming(since started: ContinuousClock.Instant) -> String {
        "app;dur=" + String(format: "%.2f", started.duration(to: .now).milliseconds)
    }
}

extension Duration {
    /// The duration in milliseconds (the access log's and Server-Timing's unit).
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
