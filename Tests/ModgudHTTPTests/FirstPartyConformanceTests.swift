import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 69: draft-ietf-oauth-first-party-apps-04, the rules a client written from the draft
/// alone found departed from (`response_type`, the ID token's `nonce`, `redirect_to_web`'s 403
/// in `AuthorizationChallengeRulesTests`, a reused code's `auth_session`), and the draft's
/// other MUSTs and SHOULDs no other test states. The conformance table in
/// docs/guides/first-party-apps.md names the test of every row.
final class FirstPartyConformanceTests: XCTestCase {
    typealias H = EmailSignInHarness
    typealias C = AuthorizationChallengeTests
    typealias R = AuthorizationChallengeRulesTests
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// Section 5.1: `response_type` is REQUIRED and `code`. A request that begins an
    /// authorization without it is `invalid_request` (RFC 6749 section 4.1.2.1) and begins
    /// nothing, and so is a step-up (whose presented session stays unspent); a session's later
    /// steps are the server's own intermediate requests (section 5.3) and need none.
    func testResponseTypeIsRequiredWhereAnAuthorizationBegins() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let begin = [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", C.challenge), ("scope", "openid email")]
            let missing = try await C.challenge(client, begin, responseType: nil)
            XCTAssertEqual(missing.status, .badRequest, missing.body)
            XCTAssertEqual(missing.json["error"] as? String, "invalid_request")
            XCTAssertTrue((missing.json["error_description"] as? String ?? "").contains("response_type"), missing.body)
            let passkey = try await C.challenge(client, [("client_id", "app"), ("code_challenge", C.challenge)], responseType: nil)
            XCTAssertEqual(passkey.json["error"] as? String, "invalid_request", "the passkey's first request too: \(passkey.body)")
            let other = try await C.challenge(client, begin, responseType: "token")
            XCTAssertEqual(other.json["error"] as? String, "unsupported_response_type", other.body)
            let sessions = try await R.sessionCount(harness)
            XCTAssertEqual(sessions, 0, "a refused first request begins no session")
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "ada@example.com").count, 0, "and sends nothing")

            // Section 4.1: RFC 6749's other authorization request parameters are accepted (`state`
            // and `redirect_uri` mean nothing without a redirect and are ignored).
            let withState = try await C.challenge(client, begin + [("state", "af0ifjsldkj"), ("redirect_uri", "https://app.example/cb")])
            XCTAssertEqual(withState.status, .forbidden, withState.body)
            XCTAssertEqual(withState.json["expecting"] as? [String], ["email_code"])
            _ = try await harness.code(for: "ada@example.com")  // its mail arrived first: mails sent without a wait arrive in no set order
            harness.clock.advance(EmailSignInService.resendCooldown + 1)

            // With it: the session, then a later step without it.
            let (_, code) = try await C.signInByCode(harness, client, "ada@example.com", number: 2)
            let tokens = try await C.redeem(client, code: code)
            let reauth = try XCTUnwrap(tokens.json["auth_session"] as? String, tokens.body)
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let stepUp = [("client_id", "app"), ("auth_session", reauth), ("code_challenge", C.challenge), ("max_age", "0")]
            let unnamed = try await C.challenge(client, stepUp, responseType: nil)
            XCTAssertEqual(unnamed.json["error"] as? String, "invalid_request", "a step-up begins an authorization: \(unnamed.body)")
            let named = try await C.challenge(client, stepUp)
            XCTAssertEqual(named.status, .forbidden, "the refused step-up spent nothing: \(named.body)")
            XCTAssertEqual(named.json["expecting"] as? [String], ["email_code"])
        }
    }

    /// OpenID Connect Core sections 3.1.2.1 and 3.1.3.6 (the challenge endpoint takes OpenID
    /// Connect's parameters, draft section 4.1): the ID token carries the `nonce` of the request
    /// that began the sign-in, by email code, by magic link and in a step-up; none without one.
    func testTheIDTokenCarriesTheNonceOfTheRequestThatBeganTheSignIn() async throws {
        harness = try await EmailSignInHarness(settings: { $0.magicLinkEnabled = true })
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let nonce = "n-0S6_WzA2Mj.~" + UUID().uuidString
            let first = try await C.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", C.challenge), ("scope", "openid email offline_access"),
                         ("nonce", nonce)])
            let session = try XCTUnwrap(first.json["auth_session"] as? String, first.body)
            let coded = try await C.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", try await harness.code(for: "ada@example.com"))])
            let tokens = try await C.redeem(client, code: try XCTUnwrap(coded.json["authorization_code"] as? String, coded.body))
            let claims = try R.claims(try XCTUnwrap(tokens.json["id_token"] as? String, tokens.body))
            XCTAssertEqual(claims["nonce"] as? String, nonce)

            // A step-up with its own nonce: the new ID token has that one.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let stepNonce = "step-" + UUID().uuidString
            let stepUp = try await C.challenge(
                client, [("client_id", "app"), ("auth_session", try XCTUnwrap(tokens.json["auth_session"] as? String)), ("code_challenge", C.challenge),
                         ("nonce", stepNonce)])
            let next = try XCTUnwrap(stepUp.json["auth_session"] as? String, stepUp.body)
            let stepped = try await C.challenge(
                client, [("client_id", "app"), ("auth_session", next), ("email_code", try await harness.code(for: "ada@example.com", number: 2))])
            let again = try await C.redeem(client, code: try XCTUnwrap(stepped.json["authorization_code"] as? String, stepped.body))
            XCTAssertEqual(try R.claims(try XCTUnwrap(again.json["id_token"] as? String))["nonce"] as? String, stepNonce)

            // A magic link.
            let linkNonce = "link-" + UUID().uuidString
            let linked = try await C.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("email_delivery", "link"), ("code_challenge", C.challenge),
                         ("scope", "openid"), ("nonce", linkNonce)])
            let link = try await harness.magicLink(for: "ada@example.com")
            let opened = try await C.challenge(
                client, [("client_id", "app"), ("auth_session", try XCTUnwrap(linked.json["auth_session"] as? String, linked.body)),
                         ("user_id", link.userID), ("magic_token", link.token)])
            let viaLink = try await C.redeem(client, code: try XCTUnwrap(opened.json["authorization_code"] as? String, opened.body))
            XCTAssertEqual(try R.claims(try XCTUnwrap(viaLink.json["id_token"] as? String))["nonce"] as? String, linkNonce)

            // Without one (an empty one is none, as every empty form parameter), the ID token has
            // none; an oversized one is refused.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let (_, plain) = try await C.signInByCode(harness, client, "ada@example.com", number: 3)
            let plainTokens = try await C.redeem(client, code: plain)
            XCTAssertNil(try R.claims(try XCTUnwrap(plainTokens.json["id_token"] as? String))["nonce"])
            let oversized = String(repeating: "n", count: FirstPartySignIn.nonceLimit + 1)
            let refused = try await C.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", C.challenge), ("nonce", oversized)])
            XCTAssertEqual(refused.json["error"] as? String, "invalid_request", refused.body)
        }
    }

    /// The -04 SHOULD: a code used more than once revokes the tokens it gave (RFC 9700 section
    /// 4.2.4, `AuthorizationChallengeRulesTests`) and the `auth_session` its token response
    /// carried: presented for a step-up, it is `invalid_session` and nothing is mailed. The
    /// session ends with its sign-in whatever ends it (here RFC 7009 revocation too).
    func testAReusedCodeRevokesTheTokensAndTheAuthSession() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (_, code) = try await C.signInByCode(harness, client, "ada@example.com")
            let tokens = try await C.redeem(client, code: code)
            let reauth = try XCTUnwrap(tokens.json["auth_session"] as? String, tokens.body)
            let reused = try await C.redeem(client, code: code)
            XCTAssertEqual(reused.json["error"] as? String, "invalid_grant", reused.body)
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let stepUp = try await C.challenge(client, [("client_id", "app"), ("auth_session", reauth), ("code_challenge", C.challenge), ("max_age", "0")])
            XCTAssertEqual(stepUp.status, .badRequest, stepUp.body)
            XCTAssertEqual(stepUp.json["error"] as? String, "invalid_session", stepUp.body)
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "ada@example.com").count, 1, "only the sign-in's code was mailed, no step-up code")

            // Revoked at /connect/revoke (RFC 7009: the whole sign-in): the same.
            let (_, second) = try await C.signInByCode(harness, client, "ada@example.com", number: 2)
            let secondTokens = try await C.redeem(client, code: second)
            let secondReauth = try XCTUnwrap(secondTokens.json["auth_session"] as? String, secondTokens.body)
            let refresh = try XCTUnwrap(secondTokens.json["refresh_token"] as? String)
            let revoked = try await H.call(client, .post, "/connect/revoke", C.form([("token", refresh), ("client_id", "app")]), headers: H.form)
            XCTAssertEqual(revoked.status, .ok, revoked.body)
            let afterRevocation = try await C.challenge(client, [("client_id", "app"), ("auth_session", secondReauth), ("code_challenge", C.challenge)])
            XCTAssertEqual(afterRevocation.json["error"] as? String, "invalid_session", afterRevocation.body)
        }
    }

    /// Section 4.1: a client that authenticates at the token endpoint authenticates here too;
    /// section 5.3.1: an `auth_session` is opaque, unique and of 256 bits; section 9.3: the
    /// requests of one `auth_session` are limited (an email code is burned by its third wrong
    /// try, and the right one then fails too).
    func testClientAuthenticationSessionEntropyAndThePerSessionLimit() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let begin = [("login_hint", "ada@example.com"), ("code_challenge", C.challenge)]
            let anonymous = try await C.challenge(client, [("client_id", "conf")] + begin)
            XCTAssertEqual(anonymous.json["error"] as? String, "invalid_client", "a confidential client without its secret: \(anonymous.body)")
            let wrongSecret = try await C.challenge(client, [("client_id", "conf"), ("client_secret", "nope")] + begin)
            XCTAssertEqual(wrongSecret.status, .unauthorized, wrongSecret.body)
            // Section 5.1: a client_id that names another client than the authenticated one is refused.
            var basic = H.form
            basic[.authorization] = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
            let mismatched = try await H.call(
                client, .post, "/connect/authorization-challenge", C.form([("response_type", "code"), ("client_id", "app")] + begin), headers: basic)
            XCTAssertEqual(mismatched.json["error"] as? String, "invalid_request", mismatched.body)
            let authenticated = try await C.challenge(client, [("client_id", "conf"), ("client_secret", harness.confidentialSecret)] + begin)
            XCTAssertEqual(authenticated.status, .forbidden, authenticated.body)
            let session = try XCTUnwrap(authenticated.json["auth_session"] as? String)
            XCTAssertEqual(Base64URLText.decode(session)?.count, 32, "256 bits, nothing readable: \(session)")
            _ = try await harness.code(for: "ada@example.com")  // its mail arrived first: mails sent without a wait arrive in no set order

            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let other = try await C.challenge(client, [("client_id", "app")] + begin)
            let otherSession = try XCTUnwrap(other.json["auth_session"] as? String, other.body)
            XCTAssertNotEqual(otherSession, session)
            let code = try await harness.code(for: "ada@example.com", number: 2)
            let wrong = String((Int(code)! + 1) % 1_000_000).leftPadded(to: 6)
            for _ in 0..<EmailChallenge.maxAttempts {
                let refused = try await C.challenge(client, [("client_id", "app"), ("auth_session", otherSession), ("email_code", wrong)])
                XCTAssertEqual(refused.json["error"] as? String, "invalid_grant", refused.body)
            }
            let burned = try await C.challenge(client, [("client_id", "app"), ("auth_session", otherSession), ("email_code", code)])
            XCTAssertEqual(burned.json["error"] as? String, "invalid_grant", "burned by its wrong tries: \(burned.body)")
        }
    }
}

extension FirstPartyConformanceTests {
    /// The conformance table of docs/guides/first-party-apps.md: every row has a level and a
    /// test (or says why none), and every test it cites exists in the type its letter names.
    func testTheConformanceTableCitesTestsThatExist() throws {
        let text = try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent("docs/guides/first-party-apps.md"), encoding: .utf8)
        let table = try XCTUnwrap(text.components(separatedBy: "## Conformance to draft -04").last)
        let types = ["C": "AuthorizationChallengeTests", "R": "AuthorizationChallengeRulesTests", "F": "FirstPartyConformanceTests",
                     "M": "ModgudClientFirstPartyTests", "D": "DiscoveryConformanceTests"]
        let methods = try Self.testMethods()
        let citation = try NSRegularExpression(pattern: #"(?:\b([CRFMD]) )?`(\w+(?:\.\w+)?)`"#)
        var problems: [String] = []
        var rows = 0
        for line in table.split(separator: "\n") where line.hasPrefix("| ") && !line.hasPrefix("| § ") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 7 else { problems.append("not 5 cells: \(line)"); continue }
            rows += 1
            if !["MUST", "SHOULD", "REQUIRED", "RECOMMENDED", "(-04)"].contains(where: cells[2].contains) { problems.append("level: \(line)") }
            let cell = cells[5]
            if cell.hasPrefix("none:") { continue }
            var letter: String?
            var cited = 0
            for match in citation.matches(in: cell, range: NSRange(cell.startIndex..., in: cell)) {
                if let range = Range(match.range(at: 1), in: cell) { letter = String(cell[range]) }
                guard let range = Range(match.range(at: 2), in: cell) else { continue }
                let name = String(cell[range])
                let parts = name.split(separator: ".").map(String.init)
                let (type, method) = parts.count == 2 ? (parts[0], parts[1]) : (letter.flatMap { types[$0] } ?? "", name)
                guard method.hasPrefix("test") else { continue }
                cited += 1
                if methods[type]?.contains(method) != true { problems.append("no test \(type).\(method)") }
            }
            if cited == 0 && !cell.contains("fp ") { problems.append("no test: \(line)") }
        }
        XCTAssertGreaterThan(rows, 35, "every MUST and SHOULD of the draft")
        XCTAssertEqual(problems, [])
    }

    /// Every `func test…` of the test types of this target, by type (classes and extensions).
    static func testMethods() throws -> [String: Set<String>] {
        let folder = DeploymentFilesTests.root.appendingPathComponent("Tests/ModgudHTTPTests")
        let declaration = try NSRegularExpression(pattern: #"^(?:final )?(?:class|extension) (\w+)"#, options: .anchorsMatchLines)
        let method = try NSRegularExpression(pattern: #"func (test\w+)\("#)
        var methods: [String: Set<String>] = [:]
        for url in try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil) where url.pathExtension == "swift" {
            let code = try String(contentsOf: url, encoding: .utf8)
            let range = NSRange(code.startIndex..., in: code)
            let names = method.matches(in: code, range: range).compactMap { Range($0.range(at: 1), in: code).map { String(code[$0]) } }
            for match in declaration.matches(in: code, range: range) {
                if let type = Range(match.range(at: 1), in: code) { methods[String(code[type]), default: []].formUnion(names) }
            }
        }
        return methods
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
