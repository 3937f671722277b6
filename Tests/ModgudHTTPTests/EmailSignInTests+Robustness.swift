import AsyncTestSupport
import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import MailTestSupport
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Email sign-in against bad input, limits, an SMTP outage and enumeration (split from
/// `EmailSignInTests.swift`, which holds the flows).
extension EmailSignInTests {
    /// Issue 11: magic links off is realm configuration, so the request says so instead of
    /// answering "you will receive a link" and sending none.
    func testMagicLinkRequestWithMagicLinksOffIsRefusedByName() async throws {
        harness = try await EmailSignInHarness(settings: { $0.magicLinkEnabled = false })
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        let before = try await harness.eventCount()
        try await harness.app.test(.router) { client in
            let reply = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"ada@example.com"}"#, headers: H.json)
            XCTAssertEqual(reply.status, .badRequest)
            XCTAssertEqual(reply.json["title"] as? String, "MagicLink.Disabled")
            let unknown = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"nobody@example.com"}"#, headers: H.json)
            XCTAssertEqual(unknown.json["title"] as? String, "MagicLink.Disabled", "the same for every address")
        }
        let after = try await harness.eventCount()
        XCTAssertEqual(after, before)
        let outbox = try await harness.outboxCount()
        XCTAssertEqual(outbox, 0)
    }

    func testBadInputGetsADocumentedErrorAndWritesNothing() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let before = try await harness.eventCount()
        try await harness.app.test(.router) { client in
            let cases: [(String, HTTPFields, HTTPResponse.Status, String)] = [
                (#"{"Email":"#, H.json, .badRequest, "Request.MalformedJSON"),
                (#"{"Email":"a@b.c","Password":"x"}"#, H.json, .badRequest, "Request.UnknownMember"),
                (#"{"FirstName":"x"}"#, H.json, .badRequest, "Request.Invalid"),
                (#"{"Email":42}"#, H.json, .badRequest, "Request.Invalid"),
                (#"["a"]"#, H.json, .badRequest, "Request.MalformedJSON"),
                ("Email=a@b.c", H.form, .unsupportedMediaType, "Request.UnsupportedMediaType"),
                (#"{"Email":"\#(String(repeating: "a", count: 70_000))@b.c"}"#, H.json, .contentTooLarge, "Request.TooLarge"),
            ]
            for (body, headers, status, title) in cases {
                let reply = try await H.call(client, .post, "/api/account/native/otp/request", body, headers: headers)
                XCTAssertEqual(reply.status, status, body.prefix(40) + "")
                XCTAssertEqual(reply.json["title"] as? String, title)
            }
            // Issue 10: not an address at all (syntax, not existence: no enumeration signal) is a
            // named 400, and so is text PostgreSQL cannot store; nothing is issued.
            let notAnAddress = try await H.requestCode(client, "not an address")
            XCTAssertEqual(notAnAddress.status, .badRequest)
            XCTAssertEqual(notAnAddress.json["title"] as? String, "Email.Invalid")
            for body in [#"{"Email":"\u0000@x.yz"}"#, #"{"Email":"a@x.yz","FirstName":"A\u0000"}"#, #"{"Email\u0000":"a@x.yz"}"#] {
                let reply = try await H.call(client, .post, "/api/account/native/otp/request", body, headers: H.json)
                XCTAssertEqual(reply.status, .badRequest, body)
                XCTAssertEqual(reply.json["title"] as? String, "Request.InvalidText", body)
            }
            for address in ["a\\u0001b@x.yz", String(repeating: "a", count: 65) + "@x.yz", "a@x..yz"] {
                let reply = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"\#(address)"}"#, headers: H.json)
                XCTAssertEqual(reply.status, .badRequest, address)
                XCTAssertEqual(reply.json["title"] as? String, "Email.Invalid", address)
            }
            let nulForm = try await H.token(client, [("grant_type", "urn:cocoar:otp"), ("client_id", "app"), ("username", "a\u{0}@b.c"), ("otp_code", "1")])
            XCTAssertEqual(nulForm.json["error"] as? String, "invalid_request")
            let missing = try await H.token(client, [("grant_type", "urn:cocoar:otp"), ("client_id", "app"), ("username", "a@b.c")])
            XCTAssertEqual(missing.json["error"] as? String, "invalid_request")
            let badUser = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "app"), ("user_id", "not-a-uuid"), ("magic_token", "x")])
            XCTAssertEqual(badUser.json["error_description"] as? String, "Invalid or expired link.")
            let badScope = try await H.redeemCode(client, "a@b.c", "123456", scope: "admin")
            XCTAssertEqual(badScope.json["error"] as? String, "invalid_scope")
            let badTarget = try await H.redeemCode(client, "a@b.c", "123456", extra: [("resource", "https://elsewhere")])
            XCTAssertEqual(badTarget.json["error"] as? String, "invalid_target")
        }
        let eventsAfterBadInput = try await harness.eventCount()
        XCTAssertEqual(eventsAfterBadInput, before)
    }

    func testPerMailboxRateLimitAnswers429TheSameForEveryAddress() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            for email in ["ada@example.com", "ghost@example.com"] {
                for _ in 0..<5 {
                    let status = try await H.requestCode(client, email).status
                    XCTAssertEqual(status, .ok)
                }
                let limited = try await H.requestCode(client, email)
                XCTAssertEqual(limited.status, .tooManyRequests)
                XCTAssertEqual(limited.json["error"] as? String, "rate_limited")
                XCTAssertEqual(limited.json["policy"] as? String, "otp-request")
                XCTAssertEqual(limited.json["dimension"] as? String, "mailbox")
                let retry = try XCTUnwrap(limited.json["retryAfterSeconds"] as? Int)
                XCTAssertEqual(limited.headers[.retryAfter], String(retry))
                XCTAssertTrue((1...720).contains(retry), "one more request per 12 minutes: \(retry)")
            }
            // The bucket refills: 12 minutes later one more is allowed.
            harness.clock.advance(721)
            let refilledStatus = try await H.requestCode(client, "ada@example.com").status
            XCTAssertEqual(refilledStatus, .ok)
        }
    }

    func testTokenEndpointCountsAuthenticatedRequestsPerClient() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.rateLimitOverrides["token.client"] = RateLimitSetting(limit: 3, windowSeconds: 60, burst: 3)
        })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            // Unknown clients and wrong secrets do not spend the client's budget.
            for _ in 0..<5 {
                let unknown = try await H.redeemCode(client, "a@b.co", "123456", clientID: "ghost")
                XCTAssertEqual(unknown.json["error"] as? String, "invalid_client")
                let wrong = try await H.redeemCode(client, "a@b.co", "123456", clientID: "conf", extra: [("client_secret", "nope")])
                XCTAssertEqual(wrong.status, .unauthorized)
            }
            for _ in 0..<3 {
                let counted = try await H.redeemCode(client, "a@b.co", "123456")
                XCTAssertEqual(counted.json["error"] as? String, "invalid_grant")
            }
            let limited = try await H.redeemCode(client, "a@b.co", "123456")
            XCTAssertEqual(limited.status, .tooManyRequests)
            XCTAssertEqual(limited.json["policy"] as? String, "token")
            XCTAssertEqual(limited.json["dimension"] as? String, "client")
            XCTAssertEqual(limited.headers[.retryAfter], "20", "3 per minute: one every 20 seconds")
            let other = try await H.redeemCode(client, "a@b.co", "123456", clientID: "conf", extra: [("client_secret", harness.confidentialSecret)])
            XCTAssertEqual(other.json["error"] as? String, "invalid_grant", "another client has its own budget")
        }
    }

    /// The code and link grants send their count with their own first read (issue 49): every
    /// refusal before that read is counted too, so no kind of bad request escapes the limit.
    /// One request a second per client: the bucket's debt after the refusals is one second each.
    func testEveryRefusalOfTheCodeAndLinkGrantsIsCounted() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.rateLimitOverrides["token.client"] = RateLimitSetting(limit: 60, windowSeconds: 60, burst: 100)
        })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let otp: [(String, String)] = [("grant_type", "urn:cocoar:otp"), ("client_id", "app")]
            let magic: [(String, String)] = [("grant_type", "urn:cocoar:magic"), ("client_id", "app")]
            let refusals: [(fields: [(String, String)], error: String)] = [
                (otp + [("username", "a@b.co")], "invalid_request"),  // no otp_code
                (otp + [("username", "not an address"), ("otp_code", "123456")], "invalid_grant"),
                (otp + [("username", "a@b.co"), ("otp_code", "123456"), ("scope", "admin")], "invalid_scope"),
                (otp + [("username", "a@b.co"), ("otp_code", "123456"), ("max_age", "soon")], "invalid_request"),
                (otp + [("username", "a@b.co"), ("otp_code", "123456")], "invalid_grant"),  // no such code: counted with the read
                (magic + [("user_id", UUID().uuidString)], "invalid_request"),  // no magic_token
                (magic + [("user_id", "not-a-uuid"), ("magic_token", "x")], "invalid_grant"),
                (magic + [("user_id", UUID().uuidString), ("magic_token", "x"), ("resource", "https://elsewhere")], "invalid_target"),
            ]
            for refusal in refusals {
                let reply = try await H.token(client, refusal.fields)
                XCTAssertEqual(reply.json["error"] as? String, refusal.error, reply.body)
            }
        }
        // The harness's clock stands still: the debt is exactly the requests counted, in seconds.
        let tat = try await harness.core.pool.query("SELECT extract(epoch FROM tat)::float8 FROM rate_limits WHERE policy = 'token.client'")
        let debt = try XCTUnwrap(tat.first?.decode(Double.self, at: 0)) - harness.clock.now().timeIntervalSince1970
        XCTAssertEqual(debt, 8, accuracy: 0.5, "each of the 8 refusals was counted once")
    }

    func testSMTPDownTheRequestStillAnswersAndTheMailGoesOutOnceItIsBack() async throws {
        let port = try SMTPSink.freePort()
        harness = try await EmailSignInHarness(smtpPort: port)
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let reply = try await H.requestCode(client, "ada@example.com")
            XCTAssertEqual(reply.status, .ok)
            XCTAssertEqual(reply.body, #"{"Message":"If your email is registered, you will receive a verification code."}"#)
        }
        // Wait until the dispatcher failed at least twice.
        let pool = harness.core.pool
        try await Eventually.wait("two failed delivery attempts") {
            try await pool.query("SELECT attempts FROM mail_outbox").first?.decode(Int.self, at: 0) ?? 0 >= 2
        }
        let sink = try SMTPSink(port: port)
        defer { sink.stop() }
        let received = try await sink.waitForMessages(1)
        XCTAssertEqual(received.count, 1)
        XCTAssertEqual(received[0].rcpt_tos, ["ada@example.com"])
        try await Eventually.wait("the delivered row leaves the outbox") { try await harness.outboxCount() == 0 }
        // With the dispatcher stopped nothing more can be sent: what the sink holds is final.
        await harness.stopDispatcher()
        XCTAssertEqual(try sink.messages().count, 1, "delivered once")
    }

    /// Codes, link tokens, and the access and refresh tokens issued (issue 44) appear nowhere in
    /// the database or the logs: only their hashes are kept.
    func testNoCodeOrMagicTokenInTheDatabaseOrTheLogs() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        let secrets = try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            _ = try await H.requestCode(client, "newbie@example.com")
            _ = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"ada@example.com"}"#, headers: H.json)
            let login = try await harness.code(for: "ada@example.com")
            let registration = try await harness.code(for: "newbie@example.com")
            let link = try await harness.magicLink(for: "ada@example.com")
            let secrets = [login, registration, link.token]
            // A wrong try, then the redemptions: the secrets pass through every layer once.
            _ = try await H.redeemCode(client, "ada@example.com", login == "999999" ? "999998" : "999999")
            let signedIn = try await H.redeemCode(client, "ada@example.com", login)
            XCTAssertEqual(signedIn.status, .ok)
            let registrationStatus = try await H.redeemCode(client, "newbie@example.com", registration).status
            XCTAssertEqual(registrationStatus, .ok)
            harness.clock.advance(1)
            let magic = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "app"), ("user_id", link.userID), ("magic_token", link.token)])
            XCTAssertEqual(magic.status, .ok, magic.body)
            // Issue 44: the tokens issued, used at a bearer endpoint and refreshed, are secrets too.
            var issued: [String] = []
            for response in [signedIn, magic] {
                issued += ["access_token", "refresh_token"].compactMap { response.json[$0] as? String }
            }
            XCTAssertEqual(issued.count, 4, "access and refresh tokens of two sign-ins")
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: [.authorization: "Bearer \(issued[0])"])
            XCTAssertEqual(userinfo.status, .ok, userinfo.body)
            let refreshed = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", issued[1])])
            XCTAssertEqual(refreshed.status, .ok, refreshed.body)
            issued += ["access_token", "refresh_token"].compactMap { refreshed.json[$0] as? String }
            return secrets + issued
        }
        let database = try await harness.databaseText()
        XCTAssertTrue(database.contains("challenge.issued"), "the search covers the events table")
        let logs = harness.logs.text
        XCTAssertFalse(logs.isEmpty, "the search covers the logs")
        for secret in secrets {
            XCTAssertFalse(database.contains(secret), "\(secret) found in the database")
            XCTAssertFalse(logs.contains(secret), "\(secret) found in the logs")
        }
    }

    /// Known, unknown and unconfirmed addresses: byte-identical answers, and the same timing
    /// (the median of each group is printed; docs/spec.md section 0 "measure it").
    func testKnownUnknownAndUnconfirmedAddressesAreIndistinguishable() async throws {
        harness = try await EmailSignInHarness(jitter: ResponseJitter(), maxConnections: 40)
        let harness = self.harness!
        let perGroup = 40
        for index in 0..<perGroup {
            _ = try await harness.registerUser("known\(index)@example.com")
            _ = try await harness.registerUser("unconfirmed\(index)@example.com", confirmed: false)
        }
        let groups = ["known", "unknown", "unconfirmed"]
        // The groups are interleaved, request by request in a shuffled order, on three parallel
        // lanes: whatever else loads the machine meanwhile loads every group alike, so the
        // comparison of medians measures the service, not the moment each group ran in.
        let results = try await harness.app.test(.router) { client in
            try await withThrowingTaskGroup(of: [(String, Double, String)].self) { group in
                for lane in 0..<groups.count {
                    group.addTask {
                        var samples: [(String, Double, String)] = []
                        for index in stride(from: lane, to: perGroup, by: groups.count) {
                            for name in groups.shuffled() {
                                let started = ContinuousClock.now
                                let reply = try await H.requestCode(client, "\(name)\(index)@example.com")
                                let elapsed = ContinuousClock.now - started
                                let headers = reply.headers.map { "\($0.name.canonicalName): \($0.value)" }.sorted().joined(separator: "\n")
                                samples.append(
                                    (name, Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15,
                                     "\(reply.status.code)\n\(headers)\n\n\(reply.body)"))
                            }
                        }
                        return samples
                    }
                }
                return try await group.reduce(into: [String: ([Double], Set<String>)]()) { results, samples in
                    for (name, latency, answer) in samples {
                        results[name, default: ([], [])].0.append(latency)
                        results[name, default: ([], [])].1.insert(answer)
                    }
                }
            }
        }
        let answers = groups.map { results[$0]!.1 }
        XCTAssertEqual(answers[0].count, 1, "one answer for every known address")
        XCTAssertEqual(answers[0], answers[1], "known and unknown answer byte for byte the same")
        XCTAssertEqual(answers[0], answers[2], "known and unconfirmed answer byte for byte the same")
        var medians: [String: Double] = [:]
        for name in groups {
            let sorted = results[name]!.0.sorted()
            medians[name] = sorted[sorted.count / 2]
            XCTAssertGreaterThanOrEqual(sorted.first!, 99, "\(name): every answer waits at least the jitter floor")
        }
        print(
            "uniform-timing medians over \(perGroup) requests each: "
                + groups.map { "\($0) \(String(format: "%.1f", medians[$0]!)) ms" }.joined(separator: ", "))
        let spread = medians.values.max()! - medians.values.min()!
        XCTAssertLessThan(spread, 100, "the medians differ by \(spread) ms (the jitter's own sampling spread is ~30 ms)")
        try await harness.allMailDelivered()
        let mails = try harness.sink!.messages().count
        let signUpBurst = RateLimitPolicy.signupPerIP.defaultSetting.burst
        XCTAssertEqual(
            mails, perGroup + min(perGroup, signUpBurst),
            "known got login codes; unknown registration codes up to the silent sign-up cap per source; unconfirmed nothing")
    }
}
