import Foundation
import HTTPTypes
import Hummingbird
import ModgudDomain
import ModgudService

/// `GET /device`: the realm's page for approving a device (RFC 8628 section 3.3's
/// `verification_uri`, issue 69). The person types the code the TV shows (or arrives with it
/// from `verification_uri_complete`), sees what asks (the app, the device's description, its
/// rough network, what it may do) with the question "Did you start this?", and approves with a
/// passkey (user verification required) or denies. The page's script calls the same JSON
/// endpoints an app does (`DeviceApprovalController`); it is served from this host only, and
/// nothing else is loaded.
struct DeviceApprovalPage: Sendable {
    let parsing: RequestParsing

    func register(on router: Router<ModgudRequestContext>) {
        router.get(RouterPath(DeviceGrantPaths.page), use: page)
        router.get(RouterPath(DeviceGrantPaths.script), use: script)
    }

    /// No framing (a framed approval page is clickjacking's target), no referrer, no caching,
    /// scripts and requests only to this host.
    static let headers: [(String, String)] = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy",
            "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
    ]

    func page(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, _) = try await parsing.realm(request)
            let typed = request.uri.queryParameters["user_code"].map(String.init).flatMap(UserCodeText.shown)
            let html = Self.render(realmName: realm.settings.displayName, userCode: typed)
            return HTMLPage.response(html, headers: Self.headers)
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "device_page")
        }
    }

    func script(_ request: Request, context: ModgudRequestContext) async -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/javascript; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: DeviceApprovalScript.source)))
    }

    /// The page, with the code prefilled when the link carried one (escaped: it is what anyone
    /// could put in a link).
    static func render(realmName: String, userCode: String?) -> String {
        let name = HTMLText.escape(realmName.isEmpty ? "your account" : realmName)
        let code = HTMLText.escape(userCode ?? "")
        return """
            \(HTMLPage.opening(title: "Connect a device to " + (realmName.isEmpty ? "your account" : realmName)))
            <style>
            body { font-family: -apple-system, system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }
            button { padding: .7rem 1.2rem; border-radius: .5rem; border: 0; background: #1f5fbf; color: #fff; font-size: 1rem; }
            button.deny { background: #8a1f1f; }
            input { font-size: 1.4rem; letter-spacing: .15rem; text-transform: uppercase; width: 10rem; }
            [hidden] { display: none; }
            </style>
            <script src="\(DeviceGrantPaths.script)" defer></script>
            </head>
            <body>
            <h1>Connect a device to \(name)</h1>
            <section id="enter">
            <p>Type the code your TV or other device shows.</p>
            <p><input id="user-code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="9" value="\(code)" aria-label="Code"></p>
            <p><button id="continue">Continue</button></p>
            </section>
            <section id="confirm" hidden>
            <h2>Did you start this?</h2>
            <p>Approve only if you are signing in on a device in front of you right now. Someone who sent you this code can use it to get into your account.</p>
            <dl>
            <dt>App</dt><dd id="client"></dd>
            <dt>Device</dt><dd id="device"></dd>
            <dt>Network</dt><dd id="network"></dd>
            <dt>Access</dt><dd id="scope"></dd>
            </dl>
            <p><button id="approve">Yes, approve with my passkey</button> <button id="deny" class="deny">No, I did not start this</button></p>
            </section>
            <p id="result" role="status"></p>
            </body>
            </html>

            """
    }
}

/// A user code as it may appear in a link, for prefilling only: eight letters of the code's
/// alphabet, shown `XXXX-XXXX`; nil for anything else.
enum UserCodeText {
    static func shown(_ text: String) -> String? {
        UserCode(typed: text)?.description
    }
}
