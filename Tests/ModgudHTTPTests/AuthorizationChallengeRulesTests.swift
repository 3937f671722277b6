import AsyncTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudHTTP
@testable import ModgudService
import PQ
import XCTest

/// Issue 45's acceptance, "every rule of the native grants holds on the new endpoint": sign-up
/// under the realm's posture, the registration fields asked for as the draft's additional
/// information, the rate limits and their 429, and the event log (a session's own stream, with
/// no address in it).
final class AuthorizationChallengeRulesTests: XCTestCase {
    typealias H = EmailSignInHarness
    typealias C = AuthorizationChallengeTests
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func begin(_ client: some TestClientProtocol, _ email: String, _ extra: [(String, String)] = []) async throws -> H.Reply {
        try await C.challenge(
            client, [("client_id", "app"), ("login_hint", email), ("code_challenge", C.challenge), ("scope", "openid profile email")] + extra)
    }

    static func claims(_ token: String) throws -> [String: Any] {
        let payload = try XCTUnwrap(Base64URLText.decode(String(token.split(separator: ".")[1])))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    /// A new address under JitOnOtp: the same first answer as for anyone, a registration code,
    /// and the code creates the account with the names the realm asked for, which the first
    /// request lacked: the draft's insufficient_authorization names them, nothing is mailed
    /// until they come, and a half answer is asked again for the rest.
    func testSignUpAsksForTheRequiredNamesFirstThenMailsTheRegistrationCode() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.registrationFields = RegistrationFields(firstname: .required, lastname: .required)
        })
        let harness = harness!
        try await harness.app.test(.router) { client in
            let first = try await Self.begin(client, "new@example.com")
            XCTAssertEqual(first.status, .forbidden, first.body)
            XCTAssertEqual(first.json["error"] as? String, "insufficient_authorization")
            XCTAssertEqual(first.json["expecting"] as? [String], ["given_name", "family_name"])
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "new@example.com").count, 0, "nothing is sent before the names")

            let half = try await C.challenge(client, [("client_id", "app"), ("auth_session", session), ("given_name", "Ada")])
            XCTAssertEqual(half.json["expecting"] as? [String], ["family_name"], half.body)
            let names = try await C.challenge(
                client, [("client_id", "app"), ("auth_session", session), ("given_name", "Ada"), ("family_name", "Lovelace")])
            XCTAssertEqual(names.json["expecting"] as? [String], ["email_code"], names.body)
            XCTAssertEqual(names.json["auth_session"] as? String, session)

            let code = try await harness.code(for: "new@example.com")
            let coded = try await C.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", code)])
            XCTAssertEqual(coded.status, .ok, coded.body)
            let tokens = try await C.redeem(client, code: try XCTUnwrap(coded.json["authorization_code"] as? String))
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            let idToken = try Self.claims(try XCTUnwrap(tokens.json["id_token"] as? String))
            XCTAssertEqual(idToken["given_name"] as? String, "Ada")
            XCTAssertEqual(idToken["family_name"] as? String, "Lovelace")
            let created = try await harness.userCount("new@example.com")
            XCTAssertEqual(created, 1)
        }
    }

    /// A known address is asked for the names too (the rule is the same whatever the address,
    /// so the question tells nothing), and the names sent first go out with the code at once.
    func testTheNamesAreAskedOfEveryAddressAlike() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationFields = RegistrationFields(firstname: .required) })
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            var answers: [String] = []
            for email in ["ada@example.com", "nobody@example.com"] {
                let reply = try await Self.begin(client, email)
                var body = reply.json
                XCTAssertNotNil(body.removeValue(forKey: "auth_session"))
                answers.append("\(reply.status.code) \(body.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })")
            }
            XCTAssertEqual(answers[0], answers[1])
            XCTAssertTrue(answers[0].contains("given_name"), answers[0])
            let given = try await Self.begin(client, "grace@example.com", [("given_name", "Grace")])
            XCTAssertEqual(given.json["expecting"] as? [String], ["email_code"], given.body)
            _ = try await harness.code(for: "grace@example.com")
        }
    }

    /// ExplicitEndpoint: a new address is signed up only when the person asks to
    /// (`prompt=create`, OpenID Connect Prompt Create); without it nothing is mailed, and the
    /// answer is the same either way.
    func testAnExplicitRealmSignsUpOnlyWithPromptCreate() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationPosture = .explicitEndpoint })
        let harness = harness!
        try await harness.app.test(.router) { client in
            let plain = try await Self.begin(client, "quiet@example.com")
            XCTAssertEqual(plain.json["expecting"] as? [String], ["email_code"], plain.body)
            let asked = try await Self.begin(client, "new@example.com", [("prompt", "create")])
            XCTAssertEqual(asked.json["expecting"] as? [String], ["email_code"], asked.body)
            let session = try XCTUnwrap(asked.json["auth_session"] as? String)
            let code = try await harness.code(for: "new@example.com")
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "quiet@example.com").count, 0, "no prompt=create: no registration code")
            let coded = try await C.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", code)])
            XCTAssertEqual(coded.status, .ok, coded.body)
            let created = try await harness.userCount("new@example.com")
            XCTAssertEqual(created, 1)
        }
    }

    /// The per-source request limit of the email-code request counts the identifier step, and
    /// refuses as everywhere: 429, Retry-After, no session and no mail.
    func testTheRequestLimitAnswers429() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.rateLimitOverrides[RateLimitPolicy.requestPerIP.name] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1)
        })
        let harness = harness!
        try await harness.app.test(.router) { client in
            let first = try await Self.begin(client, "one@example.com")
            XCTAssertEqual(first.status, .forbidden, first.body)
            let sessionsBefore = try await Self.sessionCount(harness)
            let second = try await Self.begin(client, "two@example.com")
            XCTAssertEqual(second.status, .tooManyRequests, second.body)
            XCTAssertNotNil(second.headers[.retryAfter])
            let sessionsAfter = try await Self.sessionCount(harness)
            XCTAssertEqual(sessionsAfter, sessionsBefore, "a refused request begins no session")
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "two@example.com").count, 0)
        }
    }

    /// The event log: each session is a stream (begun, code issued, code redeemed or refused
    /// with its reason; a redeemed code's step-up session begun), shared by every instance, with no address and no secret in it.
    func testASessionIsAStreamOfTheLogWithNoAddressOrSecret() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let userID = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (session, code) = try await C.signInByCode(harness, client, "ada@example.com")
            let tokens = try await C.redeem(client, code: code)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let (_, second) = try await C.signInByCode(harness, client, "ada@example.com", number: 2)
            let wrong = try await C.redeem(client, code: second, verifier: String(repeating: "w", count: 48))
            XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant")

            let rows = try await harness.core.pool.query(
                "SELECT stream_id, type, payload::text FROM events WHERE stream_id LIKE 'authorization-session-%' ORDER BY position")
            let events = try rows.rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2)) }
            XCTAssertEqual(
                events.map(\.1),
                ["authorization_session.begun", "authorization_session.code_issued", "authorization_session.code_redeemed",
                 "authorization_session.begun", "authorization_session.begun", "authorization_session.code_issued", "authorization_session.code_redeemed"])
            XCTAssertEqual(Set(events.map(\.0)).count, 3, "one stream per session (the third: the token response's auth_session)")
            XCTAssertTrue(events[3].2.contains("reauthentication"), events[3].2)
            XCTAssertTrue(events[1].2.lowercased().contains(userID.uuidString.lowercased()), "the code names the person it signs in")
            XCTAssertFalse(events[2].2.contains("refusal\":\""), "redeemed: no refusal")
            XCTAssertTrue(events[6].2.contains("wrong_verifier"), events[6].2)
            for (_, _, payload) in events {
                for secret in ["ada@example.com", session, code, second, C.challenge, tokens.json["refresh_token"] as! String] {
                    XCTAssertFalse(payload.contains(secret), "a session event holds \(secret): \(payload)")
                }
            }
        }
    }

    /// Short lives (draft section 5.1; RFC 6749 section 4.1.2): a session past its 10 minutes is
    /// invalid_session, and a code past its 60 seconds is invalid_grant and recorded as expired.
    func testExpiredSessionsAndCodesAreRefused() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let first = try await Self.begin(client, "ada@example.com")
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let code = try await harness.code(for: "ada@example.com")
            harness.clock.advance(FirstPartyAuthorization.sessionLifetime + 1)
            let late = try await C.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", code)])
            XCTAssertEqual(late.json["error"] as? String, "invalid_session", late.body)

            let (_, issued) = try await C.signInByCode(harness, client, "ada@example.com", number: 2)
            harness.clock.advance(FirstPartyAuthorization.codeLifetime + 1)
            let stale = try await C.redeem(client, code: issued)
            XCTAssertEqual(stale.json["error"] as? String, "invalid_grant", stale.body)
            let recorded = try await harness.core.pool.query(
                "SELECT payload->>'refusal' FROM events WHERE type = 'authorization_session.code_redeemed' ORDER BY position DESC LIMIT 1")
            XCTAssertEqual(try recorded.first?.decode(String?.self, at: 0), "expired")
        }
    }

    static func sessionCount(_ harness: EmailSignInHarness) async throws -> Int {
        try await harness.core.pool.query("SELECT count(*) FROM authorization_sessions").first!.decode(Int.self, at: 0)
    }
}

extension AuthorizationChallengeRulesTests {
    /// Section 5.2.2 `redirect_to_web`: what the realm does not serve natively (its native grants
    /// off, magic links off) sends the person to the realm's web sign-in when it has one; without
    /// one it is invalid_request. Nothing is sent and no session begins.
    func testWhatTheRealmDoesNotServeNativelyRedirectsToItsWebSignIn() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.webFallbackURL = "https://www.acme.test/sign-in"
            $0.magicLinkEnabled = false
        })
        let harness = harness!
        try await harness.app.test(.router) { client in
            let link = try await Self.begin(client, "ada@example.com", [("email_delivery", "link")])
            XCTAssertEqual(link.status, .forbidden, "draft -04: redirect_to_web is 403: \(link.body)")
            XCTAssertEqual(link.json["error"] as? String, "redirect_to_web")
            XCTAssertEqual(link.json["web_uri"] as? String, "https://www.acme.test/sign-in")
            XCTAssertNil(link.json["auth_session"])
            XCTAssertNil(link.json["request_uri"], "no authorization endpoint here: no PAR reference")

            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
            let off = try await Eventually.value("the realm's native grants off") {
                let reply = try await Self.begin(client, "ada@example.com")
                return reply.json["error"] as? String == "redirect_to_web" ? reply : nil
            }
            XCTAssertEqual(off.status, .forbidden, off.body)
            XCTAssertEqual(off.json["web_uri"] as? String, "https://www.acme.test/sign-in")
            let sessions = try await Self.sessionCount(harness)
            XCTAssertEqual(sessions, 0)
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "ada@example.com").count, 0)
        }
    }

    func testWithoutAWebSignInTheRefusalIsInvalidRequest() async throws {
        harness = try await EmailSignInHarness(settings: { $0.magicLinkEnabled = false })
        try await harness.app.test(.router) { client in
            let link = try await Self.begin(client, "ada@example.com", [("email_delivery", "link")])
            XCTAssertEqual(link.status, .badRequest, link.body)
            XCTAssertEqual(link.json["error"] as? String, "invalid_request", link.body)
            XCTAssertNil(link.json["web_uri"])
        }
    }
}

extension AuthorizationChallengeRulesTests {
    /// Section 6.1 with RFC 9470: the token response carries an auth_session; presented again
    /// (with a new PKCE challenge, max_age and acr_values as an API's challenge named them) it
    /// mails a code to the person's own address and begins a new sign-in of theirs, once; the
    /// new tokens have a fresh auth_time and another auth_session.
    func testTheTokenResponsesAuthSessionStepsUpOnceByACodeToTheOwnAddress() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let userID = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (_, code) = try await C.signInByCode(harness, client, "ada@example.com")
            let tokens = try await C.redeem(client, code: code)
            let reauth = try XCTUnwrap(tokens.json["auth_session"] as? String, tokens.body)
            let firstAuthTime = try XCTUnwrap(Self.claims(try XCTUnwrap(tokens.json["id_token"] as? String))["auth_time"] as? Int)

            harness.clock.advance(EmailSignInService.resendCooldown + 60)
            let other = try await C.challenge(client, [("client_id", "plain"), ("auth_session", reauth), ("code_challenge", C.challenge)])
            XCTAssertEqual(other.json["error"] as? String, "invalid_session", "another client's")
            let noPKCE = try await C.challenge(client, [("client_id", "app"), ("auth_session", reauth)])
            XCTAssertEqual(noPKCE.json["error"] as? String, "invalid_request", noPKCE.body)
            let stepUp = try await C.challenge(
                client, [("client_id", "app"), ("auth_session", reauth), ("code_challenge", C.challenge), ("max_age", "0"), ("acr_values", "urn:x")])
            XCTAssertEqual(stepUp.status, .forbidden, stepUp.body)
            XCTAssertEqual(stepUp.json["expecting"] as? [String], ["email_code"])
            let next = try XCTUnwrap(stepUp.json["auth_session"] as? String)
            XCTAssertNotEqual(next, reauth)
            let again = try await C.challenge(client, [("client_id", "app"), ("auth_session", reauth), ("code_challenge", C.challenge)])
            XCTAssertEqual(again.json["error"] as? String, "invalid_session", "a re-authorization session is spent once")

            let mailed = try await harness.code(for: "ada@example.com", number: 2)
            let coded = try await C.challenge(client, [("client_id", "app"), ("auth_session", next), ("email_code", mailed)])
            XCTAssertEqual(coded.status, .ok, coded.body)
            let stepped = try await C.redeem(client, code: try XCTUnwrap(coded.json["authorization_code"] as? String))
            XCTAssertEqual(stepped.status, .ok, stepped.body)
            let claims = try Self.claims(try XCTUnwrap(stepped.json["id_token"] as? String))
            XCTAssertEqual(claims["sub"] as? String, userID.uuidString.lowercased())
            XCTAssertGreaterThan(try XCTUnwrap(claims["auth_time"] as? Int), firstAuthTime, "a fresh authentication")
            XCTAssertNotNil(stepped.json["auth_session"] as? String)

            let continued = try await harness.core.pool.query("SELECT count(*)::int8 FROM events WHERE type = 'authorization_session.continued'")
            XCTAssertEqual(try continued.first?.decode(Int.self, at: 0), 1)
        }
    }
}

extension AuthorizationChallengeRulesTests {
    /// Shared Signals: a sign-in made through the endpoint is a session like any other. Reuse
    /// of its refresh token revokes it, and a receiver hears session-revoked naming the token
    /// family the session's code_issued event recorded.
    func testASessionFromTheEndpointIsRevokedWithItsSharedSignal() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = harness!
        let (_, secret) = try await harness.core.administration.clients.create(
            realm: "dev", id: "receiver", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["ssf.manage"]),
            metadata: .init())
        _ = try await harness.registerUser("ada@example.com")
        let background = SignalBackground.start(harness.core)
        defer { background.cancel() }
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let receiver = try SSFReceiver(
                issuer: "http://localhost:\(port)", clientID: "receiver", secret: try XCTUnwrap(secret), mode: "push", format: "iss_sub")
            _ = try await receiver.waitFor("the verification SET") { $0.event == "verification" }
            let (_, code) = try await C.signInByCode(harness, server, "ada@example.com")
            let tokens = try await C.redeem(server, code: code)
            let refresh = try XCTUnwrap(tokens.json["refresh_token"] as? String, tokens.body)
            let family = try await harness.core.pool.query(
                "SELECT lower(payload->>'familyID') FROM events WHERE type = 'authorization_session.code_issued'").first?.decode(String.self, at: 0)
            try await SharedSignalsTests.triggerReuse(server, refresh: refresh, harness: harness)
            let revoked = try await receiver.waitFor("session-revoked") { $0.event == "session-revoked" }
            let subject = try XCTUnwrap(revoked.claims["sub_id"] as? [String: Any])
            XCTAssertEqual((subject["session"] as? [String: Any])?["id"] as? String, family, "\(subject)")
            XCTAssertEqual(try receiver.refusals(), [])
        }
    }
}

extension AuthorizationChallengeRulesTests {
    /// RFC 9700 section 4.2.4 and OWASP ASVS 10.4.2: a code works once, and presenting it again
    /// revokes the tokens it gave (whoever presents it: the thief or the app).
    func testACodePresentedAgainRevokesTheTokensItGave() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (_, code) = try await C.signInByCode(harness, client, "ada@example.com")
            let tokens = try await C.redeem(client, code: code)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            let access = try XCTUnwrap(tokens.json["access_token"] as? String)
            let before = try await H.call(client, .get, "/connect/userinfo", "", headers: [.authorization: "Bearer \(access)"])
            XCTAssertEqual(before.status, .ok)

            let again = try await C.redeem(client, code: code)
            XCTAssertEqual(again.json["error"] as? String, "invalid_grant", again.body)
            let after = try await H.call(client, .get, "/connect/userinfo", "", headers: [.authorization: "Bearer \(access)"])
            XCTAssertEqual(after.status, .unauthorized, "the access token the code gave is revoked")
            let refresh = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(tokens.json["refresh_token"] as? String))])
            XCTAssertEqual(refresh.json["error"] as? String, "invalid_grant", "and its refresh token")
            let reason = try await harness.core.pool.query("SELECT payload->>'reason' FROM events WHERE type = 'token_family.revoked'")
            XCTAssertEqual(try reason.rows.map { try $0.decode(String.self, at: 0) }, ["code_reuse"])
        }
    }
}
