import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 25, item 2: `/magic-login` in a browser. The rendering in a real browser (no Referer,
/// nothing else loaded, the buttons' targets) is `ops/browser-test`; this checks the answer,
/// that the page never spends the link, and (issue 65, item 6) which app each button opens.
final class MagicLoginPageTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testThePageNeverSpendsTheLinkAndEscapesWhatItShows() async throws {
        harness = try await EmailSignInHarness { $0.webFallbackURL = "https://www.acme.test/sign-in?from=\"link\"" }
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.call(client, .post, "/api/account/magic-link/request", H.jsonBody(["Email": "ada@example.com"]), headers: H.json)
            let (link, userID, token) = try await harness.magicLink(for: "ada@example.com")
            let path = String(link.dropFirst("https://login.acme.test".count))
            for _ in 0..<2 {
                let page = try await H.call(client, .get, path, "", headers: [:])
                XCTAssertEqual(page.status, .ok)
                XCTAssertEqual(page.headers[.contentType], "text/html; charset=utf-8")
                XCTAssertEqual(page.headers[.init("Referrer-Policy")!], "no-referrer")
                XCTAssertTrue(page.headers[.init("Content-Security-Policy")!]?.contains("frame-ancestors 'none'") == true)
                XCTAssertTrue(page.headers[.init("Content-Security-Policy")!]?.contains("default-src 'none'") == true)
                XCTAssertEqual(page.headers[.cacheControl], "no-store")
                XCTAssertTrue(page.body.contains("Sign in to Acme &lt;Sign-in&gt;"), "the realm's name, escaped")
                XCTAssertFalse(page.body.contains("<Sign-in>"))
                // Issue 65, item 6: no button to this same host (Safari keeps such a link); with no
                // app configured, no button at all, and the page says where the link works.
                XCTAssertFalse(page.body.contains(#"href="/magic-login"#) || page.body.contains(#"href="https://login.acme.test/magic-login"#), page.body)
                XCTAssertFalse(page.body.contains("Open in"), page.body)
                XCTAssertTrue(page.body.contains("Open it on the phone that has the app"), page.body)
                XCTAssertTrue(page.body.contains("https://www.acme.test/sign-in?from=&quot;link&quot;"), "the fallback, escaped")
                XCTAssertFalse(page.body.contains("<script"), "no script")
            }
            // Opened twice in a browser, the link still signs in once, in the app.
            let redeemed = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "app"), ("user_id", userID), ("magic_token", token), ("scope", "openid")])
            XCTAssertEqual(redeemed.status, .ok, redeemed.body)

            // Parameters not of Modgud's form: the page, without a retry link that would echo them.
            let odd = try await H.call(client, .get, "/magic-login?userId=%3Cscript%3E&token=%22%3E%3Cb%3E", "", headers: [:])
            XCTAssertEqual(odd.status, .ok)
            XCTAssertFalse(odd.body.contains("Open in the app"))
            XCTAssertFalse(odd.body.contains("<script>") || odd.body.contains("\"><b>"))
        }
    }

    func testNoFallbackLinkUnlessTheRealmSetsOne() async throws {
        harness = try await EmailSignInHarness()
        try await harness.app.test(.router) { client in
            let page = try await H.call(client, .get, "/magic-login", "", headers: [:])
            XCTAssertEqual(page.status, .ok)
            XCTAssertFalse(page.body.contains("Sign in on the web"))
        }
    }

    static let iPhone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
    static let android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
    static let fingerprint = Array(repeating: "AB", count: 32).joined(separator: ":")

    /// Issue 65, item 6: the button hands the link to the installed app, never to this same
    /// host: Chrome's intent URL on Android (with the app's package, falling back to this page),
    /// the app's custom URL scheme on an iPhone, both labelled elsewhere.
    func testTheButtonsOpenTheAppByIntentOrCustomSchemeNeverThisHost() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let admin: HTTPFields = [.authorization: "Bearer \(EmailSignInHarness.adminToken)", .contentType: "application/json"]
        try await harness.app.test(.router) { client in
            for scheme in ["https", "HTTP", "1app", "acme app", String(repeating: "a", count: 65)] {
                let bad = try await H.call(client, .patch, "/admin/api/realms/dev/clients/app", #"{"AppUrlScheme":"\#(scheme)"}"#, headers: admin)
                XCTAssertEqual(bad.json["title"] as? String, "Client.InvalidAppUrlScheme", scheme)
            }
            let set = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/app",
                #"{"AppUrlScheme":"acme-app","AndroidApps":[{"PackageName":"com.acme.app","Sha256CertFingerprints":["\#(Self.fingerprint)"]}]}"#, headers: admin)
            XCTAssertEqual((set.json["Client"] as? [String: Any])?["AppUrlScheme"] as? String, "acme-app", set.body)

            let (userID, token) = (UUID().uuidString.lowercased(), "tok_" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
            let path = "/magic-login?userId=\(userID)&token=\(token)"
            let page = "https%3A%2F%2Flogin.acme.test%2Fmagic-login%3FuserId%3D\(userID)%26token%3D\(token)"
            let intent = "intent://login.acme.test/magic-login?userId=\(userID)&amp;token=\(token)#Intent;scheme=https;package=com.acme.app;"
                + "S.browser_fallback_url=\(page);end"
            let custom = "acme-app://magic-login?userId=\(userID)&amp;token=\(token)"
            func buttons(_ userAgent: String?) async throws -> [String] {
                let reply = try await H.call(client, .get, path, "", headers: userAgent.map { [.userAgent: $0] } ?? [:])
                XCTAssertEqual(reply.status, .ok)
                XCTAssertFalse(reply.body.contains("<script"))
                return reply.body.matches(of: /<a class="button" href="([^"]*)">([^<]*)<\/a>/).map { "\($0.output.2) -> \($0.output.1)" }
            }
            let onAndroid = try await buttons(Self.android)
            XCTAssertEqual(onAndroid, ["Open in the app -> \(intent)"])
            let onIPhone = try await buttons(Self.iPhone)
            XCTAssertEqual(onIPhone, ["Open in the app -> \(custom)"])
            let elsewhere = try await buttons("Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/126.0.0.0 Safari/537.36")
            XCTAssertEqual(elsewhere, ["Open in the iPhone app -> \(custom)", "Open in the Android app -> \(intent)"])
            let noAgent = try await buttons(nil)
            XCTAssertEqual(noAgent, elsewhere)

            // A second magic-link app is named; a client without urn:cocoar:magic opens no link.
            _ = try await harness.core.administration.clients.update(realm: "dev", id: "conf", metadata: .init()) {
                $0.androidApps = [AndroidApp(packageName: "com.acme.pro", sha256Fingerprints: [Self.fingerprint])]
            }
            _ = try await harness.core.administration.clients.update(realm: "dev", id: "plain", metadata: .init()) { $0.appURLScheme = "plain" }
            let two = try await buttons(Self.android)
            XCTAssertEqual(two.map { String($0.prefix(while: { $0 != "-" })) }, ["Open in the app (com.acme.app) ", "Open in the app (com.acme.pro) "])
            let plain = try await buttons(Self.iPhone)
            XCTAssertEqual(plain, ["Open in the app -> \(custom)"], "plain holds no urn:cocoar:magic")
        }
    }
}
