import Foundation
import ModgudService

/// The page `/magic-login` shows when a magic link reaches a browser instead of the app
/// (issue 25): a laptop, or a phone without the app. Its buttons hand the link to the app
/// (`MagicLoginButtons`: never a link to this same host, which would stay in the browser).
/// Pure rendering; no script, no external asset, every value HTML-escaped. The token is never
/// consumed here.
enum MagicLoginPage {
    /// The response headers: no Referer ever leaves with the token in the URL, no framing, no
    /// caching, nothing loaded but the page itself.
    static let headers: [(String, String)] = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
    ]

    /// The link's path and query, when its parameters have the form Modgud sends (a user id and
    /// a token); nil for anything else (the page then offers no button that would echo them).
    static func retryPath(userID: String?, token: String?) -> String? {
        guard let userID, let id = UUID(uuidString: userID), let token, !token.isEmpty, token.count <= 200,
            token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return nil }
        return "/magic-login?userId=\(id.uuidString.lowercased())&token=\(token)"
    }

    static func render(realmName: String, buttons: [MagicLoginButtons.Button], webFallbackURL: String?) -> String {
        let name = HTMLText.escape(realmName)
        let retry = buttons.map {
            #"<p><a class="button" href="\#(HTMLText.escape($0.href))">\#(HTMLText.escape($0.label))</a></p>"#
        }.joined(separator: "\n")
        let fallback = webFallbackURL.map {
            #"<p>No app on this device? <a href="\#(HTMLText.escape($0))">Sign in on the web</a>.</p>"#
        } ?? ""
        return """
            \(HTMLPage.opening(title: "Sign in to " + realmName))
            <style>
            body { font-family: -apple-system, system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }
            .button { display: inline-block; padding: .7rem 1.2rem; border-radius: .5rem; background: #1f5fbf; color: #fff; text-decoration: none; }
            </style>
            </head>
            <body>
            <h1>Sign in to \(name)</h1>
            <p>This sign-in link opens the \(name) app. Open it on the phone that has the app: tap the link in the email there\(buttons.isEmpty ? "" : ", or use the button below on that phone").</p>
            \(retry)
            \(fallback)
            <p>The link works once and for a short time. Nothing has been used yet.</p>
            </body>
            </html>

            """
    }
}
