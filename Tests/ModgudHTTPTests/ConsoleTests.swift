import EventSourcing
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 31: the operator console over HTTP, on a real database with codes over real SMTP. The
/// same scenarios in a real browser are `ops/browser-test` (Tests/Support/console_browser.py).
final class ConsoleTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    static let operatorEmail = "op@example.com"

    override func tearDown() async throws {
        await harness?.close()
    }

    /// A harness with the operator realm and one operator; the console on the routes.
    func start() async throws -> some ApplicationProtocol {
        harness = try await EmailSignInHarness()
        _ = try await harness.core.console(settings: .init()).addOperator(email: Self.operatorEmail, rpID: "localhost", metadata: .init(actor: "test"))
        return buildApplication(core: harness.core, configuration: harness.configuration, console: ConsoleConfiguration(), logger: harness.logs.logger("console"))
    }

    struct Session {
        var cookie: String
        var csrf: String
        var headers: HTTPFields { [.cookie: "modgud_console=\(cookie)", .contentType: "application/x-www-form-urlencoded"] }
    }

    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// Signs in through the pages with the `number`-th code mailed to `email`.
    static func signIn(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, _ email: String, number: Int = 1) async throws -> H.Reply {
        // Past the silent resend cooldown (120 s) of the previous code to the same address.
        harness.clock.advance(EmailSignInService.resendCooldown + 1)
        let asked = try await H.call(client, .post, "/console/sign-in", "email=\(email)", headers: Self.form)
        XCTAssertEqual(asked.status, .ok)
        XCTAssertTrue(asked.body.contains("a six-digit code is on its way"))
        let code = try await harness.code(for: email, number: number)
        return try await H.call(client, .post, "/console/sign-in/code", "email=\(email)&code=\(code)", headers: Self.form)
    }

    static func session(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, number: Int = 1) async throws -> Session {
        let reply = try await signIn(client, harness, Self.operatorEmail, number: number)
        XCTAssertEqual(reply.status, .seeOther, reply.body)
        let setCookie = try XCTUnwrap(reply.headers[.setCookie])
        let token = try XCTUnwrap(setCookie.firstMatch(of: /modgud_console=([A-Za-z0-9_-]+);/)).1
        let page = try await H.call(client, .get, "/console", "", headers: [.cookie: "modgud_console=\(token)"])
        XCTAssertEqual(page.status, .ok)
        let csrf = try XCTUnwrap(page.body.firstMatch(of: /name="_csrf" value="([A-Za-z0-9_-]+)"/)).1
        return Session(cookie: String(token), csrf: String(csrf))
    }

    private func userID(_ email: String) async throws -> UUID {
        try await harness.core.administration.users.create(realm: "dev", email: email, metadata: .init(actor: "test")).id
    }

    func testAnOperatorSignsInAndEveryActionIsAnEventWithTheOperatorAsActor() async throws {
        let app = try await start()
        let harness = harness!
        let ada = try await userID("ada@example.com")
        try await app.test(.router) { client in
            let reply = try await Self.signIn(client, harness, Self.operatorEmail)
            XCTAssertEqual(reply.status, .seeOther)
            XCTAssertEqual(reply.headers[.location], "/console")
            let cookie = try XCTUnwrap(reply.headers[.setCookie])
            for attribute in ["Path=/console", "HttpOnly", "SameSite=Strict", "Secure"] { XCTAssertTrue(cookie.contains(attribute), cookie) }
            let session = try await Self.session(client, harness, number: 2)
            for path in ["/console", "/console/realms", "/console/realms/dev", "/console/realms/dev/clients", "/console/realms/dev/clients/app",
                         "/console/realms/dev/users", "/console/realms/dev/users/\(ada.uuidString.lowercased())", "/console/projections",
                         "/console/mail", "/console/signals", "/console/realms/dev/audit"] {
                let page = try await H.call(client, .get, path, "", headers: session.headers)
                XCTAssertEqual(page.status, .ok, path)
                let policy = try XCTUnwrap(page.headers[HTTPField.Name("Content-Security-Policy")!])
                XCTAssertTrue(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), policy)
                XCTAssertEqual(page.headers[.cacheControl], "no-store")
                XCTAssertNotNil(page.headers[HTTPField.Name("Server-Timing")!]?.firstMatch(of: /^app;dur=\d+\.\d\d$/), path)
            }
            // Finding by address goes straight to the user.
            let found = try await H.call(client, .get, "/console/realms/dev/users?q=ada%40example.com", "", headers: session.headers)
            XCTAssertEqual(found.headers[.location], "/console/realms/dev/users/\(ada.uuidString.lowercased())")
            let disabled = try await H.call(
                client, .post, "/console/realms/dev/users/\(ada.uuidString.lowercased())/disable", "_csrf=\(session.csrf)", headers: session.headers)
            XCTAssertEqual(disabled.status, .seeOther, disabled.body)
            // An action on a side table (no aggregate of its own) is an event in the operator's log.
            let retried = try await H.call(client, .post, "/console/mail/retry", "_csrf=\(session.csrf)", headers: session.headers)
            XCTAssertEqual(retried.status, .seeOther, retried.body)
        }
        let status = try await harness.core.administration.users.state(realm: "dev", id: ada).status
        XCTAssertEqual(status, .disabled)
        let found = try await harness.core.administration.users.find(realm: "operators", Self.operatorEmail)
        let operatorID = try XCTUnwrap(found)
        let history = try await harness.core.administration.audit.userHistory(realm: "dev", userID: ada)
        let actor = "operator:operators/\(operatorID.uuidString.lowercased())"
        XCTAssertEqual(history.last { $0.event == UserDisabled.eventType }?.actor, actor)
        let own = try await harness.core.administration.audit.userHistory(realm: "operators", userID: operatorID)
        let recorded = try XCTUnwrap(own.last { $0.event == OperatorActionRecorded.eventType })
        XCTAssertEqual(recorded.actor, actor)
        XCTAssertEqual(recorded.detail, "mail.retry-dead outbox")
    }

    /// Issue 41: the realm page says which key signs, which are published and until when,
    /// and retires one (refused in its overlap unless "now" is ticked).
    func testTheRealmPageShowsAndRetiresSigningKeys() async throws {
        let app = try await start()
        let harness = harness!
        let first = try await harness.core.realmActors.actor(for: StreamNames.realm("dev")).current().state.activeKey?.kid
        let old = try XCTUnwrap(first)
        _ = try await harness.core.keys.rotate(realm: "dev", algorithm: .rs256, now: Date(), metadata: .init())
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let page = try await H.call(client, .get, "/console/realms/dev", "", headers: session.headers)
            XCTAssertTrue(page.body.contains("<code>\(old)</code></td><td>ES256</td>"), page.body)
            XCTAssertTrue(page.body.contains("in JWKS, retirable"), page.body)
            XCTAssertTrue(page.body.contains("<strong>signing</strong>"), page.body)
            let early = try await H.call(
                client, .post, "/console/realms/dev/retire-key", "_csrf=\(session.csrf)&kid=\(old)", headers: session.headers)
            XCTAssertEqual(early.status, .ok, "the page again, with the refusal")
            XCTAssertTrue(early.body.contains("tokens it signed live until"), early.body)
            let forced = try await H.call(
                client, .post, "/console/realms/dev/retire-key", "_csrf=\(session.csrf)&kid=\(old)&force=on", headers: session.headers)
            XCTAssertEqual(forced.status, .seeOther, forced.body)
            let after = try await H.call(client, .get, "/console/realms/dev", "", headers: session.headers)
            XCTAssertTrue(after.body.contains("<code>\(old)</code></td><td>ES256</td><td>") && after.body.contains("retired"), after.body)
        }
        let published = try await harness.core.realmActors.actor(for: StreamNames.realm("dev")).current().state.publishedKeys.map(\.kid)
        XCTAssertFalse(published.contains(old))
    }

    func testFormsFromElsewhereOrWithoutTheTokenAreRefusedAndChangeNothing() async throws {
        let app = try await start()
        let harness = harness!
        let ada = try await userID("ada@example.com")
        let path = "/console/realms/dev/users/\(ada.uuidString.lowercased())/disable"
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            var crossOrigin = session.headers
            crossOrigin[.origin] = "https://evil.example"
            var crossSite = session.headers
            crossSite[HTTPField.Name("Sec-Fetch-Site")!] = "cross-site"
            let attempts: [(String, HTTPFields)] = [
                ("", session.headers), ("_csrf=wrong", session.headers), ("_csrf=\(session.csrf)x", session.headers),
                ("_csrf=\(session.csrf)", crossOrigin), ("_csrf=\(session.csrf)", crossSite), ("_csrf=\(session.csrf)", Self.form),
            ]
            for (body, headers) in attempts {
                let reply = try await H.call(client, .post, path, body, headers: headers)
                XCTAssertEqual(reply.status, .forbidden, "\(body) \(headers)")
                XCTAssertTrue(reply.body.contains("Refused"))
            }
        }
        let status = try await harness.core.administration.users.state(realm: "dev", id: ada).status
        XCTAssertEqual(status, .active, "nothing was done")
        let history = try await harness.core.administration.audit.userHistory(realm: "dev", userID: ada)
        XCTAssertFalse(history.contains { $0.event == UserDisabled.eventType })
    }

    func testNonOperatorsAreRefusedAndSessionsEndWithTheRoleTheStampTheIdleTimeoutAndSignOut() async throws {
        let app = try await start()
        let harness = harness!
        let admin = harness.core.administration
        _ = try await admin.users.create(realm: "operators", email: "mallory@example.com", metadata: .init(actor: "test"))
        let found = try await admin.users.find(realm: "operators", Self.operatorEmail)
        let operatorID = try XCTUnwrap(found)
        try await app.test(.router) { client in
            // A user of the operator realm without the role: the right code, no session.
            let refused = try await Self.signIn(client, harness, "mallory@example.com")
            XCTAssertEqual(refused.status, .forbidden)
            XCTAssertNil(refused.headers[.setCookie])
            XCTAssertTrue(refused.body.contains("not an operator"))
            // Someone of another realm gets no code at all; a wrong code is the uniform refusal.
            let wrong = try await H.call(client, .post, "/console/sign-in/code", "email=op%40example.com&code=000000", headers: Self.form)
            XCTAssertEqual(wrong.status, .badRequest)
            XCTAssertTrue(wrong.body.contains("Invalid or expired code."))

            func works(_ session: Session) async throws -> Bool {
                try await H.call(client, .get, "/console/realms", "", headers: session.headers).status == .ok
            }
            var number = 1
            func next() async throws -> Session {
                defer { number += 1 }
                return try await Self.session(client, harness, number: number)
            }
            // The role taken away.
            let first = try await next()
            do { let ok = try await works(first); XCTAssertTrue(ok) }
            _ = try await admin.users.setRole(OperatorConsole.role, granted: false, realm: "operators", userID: operatorID, metadata: .init(actor: "test"))
            do { let ok = try await works(first); XCTAssertFalse(ok) }
            _ = try await admin.users.setRole(OperatorConsole.role, granted: true, realm: "operators", userID: operatorID, metadata: .init(actor: "test"))
            // The idle timeout (15 minutes), but use keeps a session alive.
            let second = try await next()
            harness.clock.advance(14 * 60)
            do { let ok = try await works(second); XCTAssertTrue(ok) }
            harness.clock.advance(14 * 60)
            do { let ok = try await works(second); XCTAssertTrue(ok) }
            harness.clock.advance(16 * 60)
            do { let ok = try await works(second); XCTAssertFalse(ok) }
            // The operator's sessions ended everywhere (a new security stamp).
            let third = try await next()
            _ = try await admin.users.apply(.logoutEverywhere, realm: "operators", userID: operatorID, metadata: .init(actor: "test"))
            do { let ok = try await works(third); XCTAssertFalse(ok) }
            // Signing out.
            let fourth = try await next()
            let out = try await H.call(client, .post, "/console/sign-out", "_csrf=\(fourth.csrf)", headers: fourth.headers)
            XCTAssertEqual(out.status, .seeOther)
            XCTAssertTrue(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            do { let ok = try await works(fourth); XCTAssertFalse(ok) }
            let page = try await H.call(client, .get, "/console/realms", "", headers: fourth.headers)
            XCTAssertEqual(page.headers[.location], "/console/sign-in")
        }
    }

    func testWhatOperatorsAndUsersTypedIsShownAsText() async throws {
        let app = try await start()
        let harness = harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "evil", settings: ClientSettings(type: .public, displayName: "<script>alert(1)</script>", grants: [.otp], allowedScopes: ["openid"]),
            metadata: .init(actor: "test"))
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let page = try await H.call(client, .get, "/console/realms/dev/clients/evil", "", headers: session.headers)
            XCTAssertTrue(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            XCTAssertFalse(page.body.contains("<script>alert"))
            let search = try await H.call(client, .get, "/console/realms/dev/users?q=%22%3E%3Cscript%3Ex", "", headers: session.headers)
            XCTAssertEqual(search.status, .ok)
            XCTAssertTrue(search.body.contains("value=\"&quot;&gt;&lt;script&gt;x\""), search.body)
            XCTAssertTrue(search.body.contains("No user's address starts with that"), search.body)
            XCTAssertFalse(search.body.contains("<script>x"), "nor in the title or the count")
        }
    }

    func testBadInputGetsAClearErrorAndChangesNothing() async throws {
        let app = try await start()
        let harness = harness!
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let settings = "/console/realms/dev/settings"
            let cases: [(String, HTTPFields, HTTPResponse.Status, String)] = [
                ("_csrf=\(session.csrf)&registration_posture=JitOnOtp&access_minutes=0&refresh_days=14&absolute_days=90&reuse_grace=0", session.headers,
                 .badRequest, "Access token lifetime (minutes) must be a whole number from 1 to 60."),
                ("_csrf=\(session.csrf)&registration_posture=Sometimes", session.headers, .badRequest, "Choose a registration posture."),
                ("_csrf=%zz", session.headers, .badRequest, "The form could not be read."),
                ("_csrf=\(session.csrf)&_csrf=\(session.csrf)", session.headers, .badRequest, "The form could not be read."),
                (String(repeating: "a", count: 70_000), session.headers, .contentTooLarge, "larger than"),
            ]
            for (body, headers, status, message) in cases {
                let reply = try await H.call(client, .post, settings, body, headers: headers)
                XCTAssertEqual(reply.status, status, body.prefix(60).description)
                XCTAssertTrue(reply.body.contains(message), reply.body)
            }
            var json = session.headers
            json[.contentType] = "application/json"
            let unsupported = try await H.call(client, .post, settings, "{}", headers: json)
            XCTAssertEqual(unsupported.status, .unsupportedMediaType)
            for path in ["/console/realms/nowhere", "/console/realms/dev/users/\(UUID())", "/console/realms/dev/clients/none", "/console/realms/dev/users/x"] {
                let missing = try await H.call(client, .get, path, "", headers: session.headers)
                XCTAssertEqual(missing.status, .notFound, path)
            }
            let unknown = try await H.call(client, .post, "/console/projections/none/rebuild", "_csrf=\(session.csrf)", headers: session.headers)
            XCTAssertEqual(unknown.status, .notFound)
        }
        let realm = try await harness.core.administration.realms.get("dev")
        XCTAssertEqual(realm.settings?.nativeGrants.accessTokenLifetimeMinutes, 15, "no refused form changed the realm")
        XCTAssertEqual(realm.settings?.registrationPosture, .jitOnOtp)
    }

    /// The user list pages by keyset: forward through every user once, in registration order,
    /// and back again to the same pages.
    func testTheUserListPagesForwardAndBackInRegistrationOrder() async throws {
        let app = try await start()
        let harness = harness!
        var created: [String] = []
        for index in 0..<120 {
            harness.clock.advance(1)
            created.append(try await harness.core.administration.users.create(realm: "dev", email: "u\(index)@example.com", metadata: .init()).id.uuidString.lowercased())
        }
        let expected = created
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            func page(_ query: String) async throws -> (ids: [String], previous: String?, next: String?) {
                let reply = try await H.call(client, .get, "/console/realms/dev/users" + query, "", headers: session.headers)
                XCTAssertEqual(reply.status, .ok)
                let ids = reply.body.matches(of: /users\/([0-9a-f-]{36})"><code>/).map { String($0.1) }
                return (ids, reply.body.firstMatch(of: /users\?before=([0-9a-f-]{36})/).map { String($0.1) },
                        reply.body.firstMatch(of: /users\?after=([0-9a-f-]{36})/).map { String($0.1) })
            }
            var pages: [[String]] = []
            var current = try await page("")
            XCTAssertNil(current.previous)
            pages.append(current.ids)
            while let next = current.next {
                current = try await page("?after=\(next)")
                XCTAssertNotNil(current.previous)
                pages.append(current.ids)
            }
            XCTAssertEqual(pages.map(\.count), [50, 50, 20])
            XCTAssertEqual(pages.flatMap { $0 }, expected, "every user once, in registration order")
            let back = try await page("?before=\(try XCTUnwrap(current.previous))")
            XCTAssertEqual(back.ids, pages[1])
            let first = try await page("?before=\(try XCTUnwrap(back.previous))")
            XCTAssertEqual(first.ids, pages[0])
            XCTAssertNil(first.previous, "the first page again, with nothing before it")
        }
    }
}
