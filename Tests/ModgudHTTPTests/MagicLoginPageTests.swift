import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 25, item 2: `/magic-login` in a browser. The rendering in a real browser (no Referer,
/// nothing else loaded) is `ops/browser-test`; this checks the answer and that the page never
/// spends the link.
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
                XCTAssertTrue(page.body.contains(#"href="/magic-login?userId=\#(userID)&amp;token=\#(token)""#), page.body)
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
}
