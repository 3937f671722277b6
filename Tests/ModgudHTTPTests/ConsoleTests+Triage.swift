import EventSourcing
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import AsyncTestSupport
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 43, "why can't this user sign in?": refused refreshes, tripped rate limits and the
/// users list's search and sort, over HTTP on a real database.
extension ConsoleTests {
    func testARefusedRefreshIsAFailureOfThePersonsHistoryAndOfTheRealmsList() async throws {
        let app = try await start()
        let harness = harness!
        let ada = try await harness.core.administration.users.create(realm: "dev", email: "ada@example.com", metadata: .init(actor: "test")).id
        try await app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let tokens = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
            let refreshToken = try XCTUnwrap(tokens.json["refresh_token"] as? String, tokens.body)
            // The operator signs Ada out everywhere: her app's next refresh meets the new stamp,
            // and the ones after it a revoked session.
            _ = try await harness.core.administration.users.apply(.logoutEverywhere, realm: "dev", userID: ada, metadata: .init(actor: "test"))
            var headers = H.form
            headers[.userAgent] = "okhttp/4.12.0"
            for _ in 1...3 {
                let refused = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", refreshToken)], headers: headers)
                XCTAssertEqual(refused.json["error"] as? String, "invalid_grant", refused.body)
            }
            let session = try await Self.session(client, harness)
            let list = try await H.call(client, .get, "/console/realms/dev/failures?window=hour&kind=refresh_refused", "", headers: session.headers)
            XCTAssertTrue(list.body.contains("2 failure(s)"), list.body)
            XCTAssertTrue(list.body.contains("<td>revoked (stamp changed)</td>") && list.body.contains("<td>stamp changed</td>"), list.body)
            let history = try await H.call(
                client, .get, "/console/realms/dev/users/\(ada.uuidString.lowercased())/audit?kind=failures", "", headers: session.headers)
            XCTAssertTrue(history.body.contains("token_family.refresh_refused") && history.body.contains("reason=revoked revoked=stamp"), history.body)
        }
        // Three refusals, two records: the stamp's revocation, then one refusal of the dead
        // family (at most one a minute).
        let failures = try await harness.core.administration.audit.signInFailures(realm: "dev", since: Date().addingTimeInterval(-3600))
        XCTAssertEqual(failures.map(\.kind), [.refreshRefused, .refreshRefused])
        XCTAssertEqual(failures.map(\.userAgent), ["okhttp/4.12.0", "okhttp/4.12.0"])
        XCTAssertEqual(failures.map(\.client), ["app", "app"], "a refresh names its client through its family")
    }

    func testATrippedRateLimitIsRecordedOnceAndNamesOnlyAnAccountsOwner() async throws {
        let app = try await start()
        let harness = harness!
        let ada = try await harness.core.administration.users.create(realm: "dev", email: "ada@example.com", metadata: .init(actor: "test")).id
        _ = try await harness.core.administration.realms.update("dev", metadata: .init(actor: "test")) {
            $0.rateLimitOverrides["otp-request.mailbox"] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1)
        }
        var fields = H.json
        fields[.userAgent] = "Acme/3.2 (iOS 18.1) Alamofire/5.9.1"
        let headers = fields
        try await app.test(.router) { client in
            for address in ["ada@example.com", "nobody@example.com"] {
                var statuses: [Int] = []
                for _ in 1...4 {
                    statuses.append(try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(["Email": address]), headers: headers).status.code)
                }
                XCTAssertEqual(statuses, [200, 429, 429, 429], address)
            }
        }
        // Recorded off the refused request's path: the log has them a moment later. One per
        // bucket, though three requests were refused in each.
        let tripped = try await Eventually.value("both trips recorded") { () async throws -> [AuditQueries.SignInFailure]? in
            let found = try await harness.core.administration.audit.signInFailures(realm: "dev", since: Date().addingTimeInterval(-3600), kind: .rateLimited)
            return found.count >= 2 ? found : nil
        }
        XCTAssertEqual(tripped.count, 2)
        XCTAssertEqual(Set(tripped.compactMap(\.detail)), ["otp-request.mailbox, retry after 3600 s"])
        XCTAssertEqual(tripped.map(\.userAgent), Array(repeating: "Acme/3.2 (iOS 18.1) Alamofire/5.9.1", count: 2))
        let events = try await harness.core.pool.query("SELECT lower(payload->>'userID') FROM events WHERE type = 'rate_limit.tripped' ORDER BY position")
        XCTAssertEqual(try events.rows.map { try $0.decode(String?.self, at: 0) }.compactMap { $0 }, [ada.uuidString.lowercased()],
            "Ada's trip names her; the unknown address's names no one")
        let history = try await harness.core.administration.audit.userHistory(realm: "dev", userID: ada)
        XCTAssertEqual(history.filter { $0.event == RateLimitTripped.eventType }.map(\.detail), ["policy=otp-request.mailbox"])
        let plain = try await harness.core.pool.query("SELECT count(*)::int8 FROM events WHERE payload::text LIKE '%example.com%' AND type = 'rate_limit.tripped'")
        XCTAssertEqual(try plain.first?.decode(Int64.self, at: 0), 0, "no address in a trip's record")
    }

    func testTheUsersListSortsByLastSignInAndFindsTheStartOfAnAddress() async throws {
        let app = try await start()
        let harness = harness!
        var created: [String: UUID] = [:]
        for address in ["ada@example.com", "adam@example.org", "bob@example.com", "carol@other.test"] {
            created[address] = try await harness.core.administration.users.create(realm: "dev", email: address, metadata: .init(actor: "test")).id
        }
        let ids = created
        try await app.test(.router) { client in
            // Carol signs in, then Bob: the last sign-in order is Bob, Carol, then those who never did.
            for address in ["carol@other.test", "bob@example.com"] {
                harness.clock.advance(EmailSignInService.resendCooldown + 1)
                _ = try await H.requestCode(client, address)
                let signedIn = try await H.redeemCode(client, address, try await harness.code(for: address))
                XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            }
            _ = try await harness.core.makeProjectionDaemon().catchUp()
            let session = try await Self.session(client, harness)
            let sorted = try await H.call(client, .get, "/console/realms/dev/users?sort=last-sign-in", "", headers: session.headers)
            let order = sorted.body.matches(of: /<td>([a-z]+@[a-z.]+)<\/td>/).map { String($0.1) }
            XCTAssertEqual(Array(order.prefix(2)), ["bob@example.com", "carol@other.test"], sorted.body)
            XCTAssertTrue(sorted.body.contains(#"<option value="last-sign-in" selected>"#))
            XCTAssertTrue(sorted.body.contains("<td>never</td>"), "those who never signed in say so")
            let newest = try await H.call(client, .get, "/console/realms/dev/users?sort=newest", "", headers: session.headers)
            XCTAssertEqual(newest.body.matches(of: /<td>([a-z]+@[a-z.]+)<\/td>/).map { String($0.1) }.first, "carol@other.test", "Carol registered last")

            let started = try await H.call(client, .get, "/console/realms/dev/users?q=ADA", "", headers: session.headers)
            XCTAssertEqual(started.status, .ok)
            XCTAssertEqual(Set(started.body.matches(of: /<td>([a-z]+@[a-z.]+)<\/td>/).map { String($0.1) }), ["ada@example.com", "adam@example.org"])
            XCTAssertTrue(started.body.contains("users looked through for addresses starting with <strong>ADA</strong>"), started.body)
            let domain = try await H.call(client, .get, "/console/realms/dev/users?q=%40example.", "", headers: session.headers)
            XCTAssertEqual(Set(domain.body.matches(of: /<td>([a-z]+@[a-z.]+)<\/td>/).map { String($0.1) }),
                ["ada@example.com", "adam@example.org", "bob@example.com"])
            let exact = try await H.call(client, .get, "/console/realms/dev/users?q=carol%40other.test", "", headers: session.headers)
            XCTAssertEqual(exact.headers[.location], "/console/realms/dev/users/\(ids["carol@other.test"]!.uuidString.lowercased())", "a whole address goes to its user")
        }
        // A bounded search resumes where it stopped: one address opened per search here.
        let users = harness.core.administration.users
        var resume: UUID?
        var seen: [String] = []
        var searches = 0
        repeat {
            let found = try await users.search(realm: "dev", addressPrefix: "ada", after: resume, budget: 1)
            XCTAssertLessThanOrEqual(found.scanned, 1)
            seen += found.matches.compactMap(\.email)
            resume = found.resumeAfter
            searches += 1
        } while resume != nil && searches < 10
        XCTAssertEqual(seen, ["ada@example.com", "adam@example.org"], "every match found once, in registration order")
    }

    /// Issue 43: the doc paths a page names are links to the handbook this binary ships.
    func testDocPathsLinkToTheHandbookThisBinaryShips() async throws {
        let app = try await start()
        let harness = harness!
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let health = try await H.call(client, .get, "/console", "", headers: session.headers)
            XCTAssertTrue(health.body.contains(#"<a href="/console/docs/metrics">docs/operations/metrics.md</a>"#), health.body)
            let metrics = try await H.call(client, .get, "/console/docs/metrics", "", headers: session.headers)
            XCTAssertEqual(metrics.status, .ok)
            let shipped = try String(contentsOfFile: #filePath.replacingOccurrences(of: "Tests/ModgudHTTPTests/ConsoleTests+Triage.swift", with: "docs/operations/metrics.md"), encoding: .utf8)
            let heading = try XCTUnwrap(shipped.split(separator: "\n").first { $0.hasPrefix("# ") }).dropFirst(2)
            XCTAssertTrue(metrics.body.contains("<h1>\(heading)</h1>"), "titled by the page's own heading")
            XCTAssertTrue(metrics.body.contains("modgud_http_requests_total"), "the page's text, as shipped")
            XCTAssertTrue(metrics.body.contains(#"<a href="/console/docs/console">"#), "with the other pages")
            let index = try await H.call(client, .get, "/console/docs", "", headers: session.headers)
            XCTAssertEqual(index.body.components(separatedBy: "<li><a href=\"/console/docs/").count - 1, 11, index.body)
            let missing = try await H.call(client, .get, "/console/docs/architecture", "", headers: session.headers)
            XCTAssertEqual(missing.status, .notFound, "only the operator's pages ship")
            let signedOut = try await H.call(client, .get, "/console/docs/metrics", "", headers: [:])
            XCTAssertEqual(signedOut.headers[.location], "/console/sign-in", "behind the sign-in like every page")
        }
    }

    /// Issue 47: the client page says the client's attestation mode, how many App Attest keys
    /// its apps attested and how many of its requests were refused, and its form turns
    /// attestation on.
    func testTheClientPageShowsAndSetsClientAttestation() async throws {
        let app = try await start()
        let harness = harness!
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let before = try await H.call(client, .get, "/console/realms/dev/clients/app", "", headers: session.headers)
            XCTAssertTrue(before.body.contains("Client attestation: <strong>off</strong> · App Attest keys attested: <strong>0</strong>"), before.body)
            let form = "_csrf=\(session.csrf)&display_name=App&grant_urn%3Acocoar%3Aotp=on&grant_refresh_token=on&scopes=openid%20email"
                + "&access_token_format=reference&client_attestation=required&app_attest_environments=production%2Bdevelopment"
            let saved = try await H.call(
                client, .post, "/console/realms/dev/clients/app", form, headers: session.headers)
            XCTAssertLessThan(saved.status.code, 400, saved.body)
            let settings = try await harness.core.administration.clients.get(realm: "dev", id: "app").settings
            XCTAssertEqual(settings?.clientAttestation, .required)
            XCTAssertEqual(settings?.appAttestEnvironments, .productionAndDevelopment)
            let after = try await H.call(client, .get, "/console/realms/dev/clients/app", "", headers: session.headers)
            XCTAssertTrue(after.body.contains("Client attestation: <strong>required</strong>"), after.body)
            // A script with only the client id, twice: refused, and counted once every instance flushed.
            for _ in 0..<2 {
                let refused = try await H.call(
                    client, .post, "/api/account/native/otp/request", #"{"Email":"script@example.com","ClientId":"app"}"#, headers: H.json)
                XCTAssertEqual(refused.status, .unauthorized, refused.body)
            }
            try await XCTUnwrap(harness.core.clientAttestation).tally.flush()
            let counted = try await H.call(client, .get, "/console/realms/dev/clients/app", "", headers: session.headers)
            XCTAssertTrue(
                counted.body.contains("Requests attested: <strong>0</strong> · served unattested: <strong>0</strong> · refused: <strong>2</strong>"),
                counted.body)
            let bad = try await H.call(
                client, .post, "/console/realms/dev/clients/app", form.replacingOccurrences(of: "=required", with: "=sometimes"),
                headers: session.headers)
            XCTAssertTrue(bad.body.contains("Client attestation is off, allowed or required"), bad.body)
        }
    }
}
