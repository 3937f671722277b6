import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 45: OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps) over
/// the native grants' services: the steps, the code, and the refusals.
final class AuthorizationChallengeTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let verifier = String(repeating: "v", count: 20) + "-._~" + String(repeating: "A", count: 24)
    static var challenge: String { Base64URLText.encode(Array(SHA256.hash(data: Array(verifier.utf8)))) }

    static func form(_ fields: [(String, String)]) -> String {
        fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }.joined(separator: "&")
    }

    /// One request, as a client written to draft -04 sends it: a request that begins an
    /// authorization (no `auth_session`, or a token response's one with a new
    /// `code_challenge`) carries `response_type=code` (section 5.1) unless `responseType` says
    /// otherwise (nil: none); a session's later steps (section 5.3) carry what they bring.
    /// Every error's `error` and `error_description` keep to section 5.2.2's characters.
    static func challenge(_ client: some TestClientProtocol, _ fields: [(String, String)], responseType: String? = "code") async throws -> H.Reply {
        var sent = fields
        let begins = !fields.contains { $0.0 == "auth_session" } || fields.contains { $0.0 == "code_challenge" }
        if begins, let responseType, !fields.contains(where: { $0.0 == "response_type" }) { sent.insert(("response_type", responseType), at: 0) }
        let reply = try await H.call(client, .post, "/connect/authorization-challenge", form(sent), headers: H.form)
        assertErrorCharacters(reply)
        return reply
    }

    /// Section 5.2.2: `error` and `error_description` stay within %x20-21 / %x23-5B / %x5D-7E.
    static func assertErrorCharacters(_ reply: H.Reply, file: StaticString = #filePath, line: UInt = #line) {
        for member in ["error", "error_description"] {
            guard let text = reply.json[member] as? String else { continue }
            let outside = text.unicodeScalars.filter { !((0x20...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\") }
            XCTAssertTrue(outside.isEmpty, "\(member) has \(String(outside)): \(text)", file: file, line: line)
        }
    }

    /// The whole email-code exchange: identifier, code, authorization code, tokens.
    static func signInByCode(
        _ harness: EmailSignInHarness, _ client: some TestClientProtocol, _ email: String, clientID: String = "app", number: Int = 1
    ) async throws -> (session: String, code: String) {
        let first = try await challenge(
            client, [("client_id", clientID), ("login_hint", email), ("code_challenge", Self.challenge), ("code_challenge_method", "S256"),
                     ("scope", "openid email offline_access")])
        XCTAssertEqual(first.status, .forbidden, first.body)
        XCTAssertEqual(first.json["error"] as? String, "insufficient_authorization")
        XCTAssertEqual(first.json["expecting"] as? [String], ["email_code"])
        let session = try XCTUnwrap(first.json["auth_session"] as? String)
        let code = try await harness.code(for: email, number: number)
        let second = try await challenge(client, [("client_id", clientID), ("auth_session", session), ("email_code", code)])
        XCTAssertEqual(second.status, .ok, second.body)
        return (session, try XCTUnwrap(second.json["authorization_code"] as? String, second.body))
    }

    static func redeem(_ client: some TestClientProtocol, code: String, verifier: String = verifier, clientID: String = "app") async throws -> H.Reply {
        try await H.token(client, [("grant_type", "authorization_code"), ("client_id", clientID), ("code", code), ("code_verifier", verifier)])
    }

    func testAnEmailCodeSignsInThroughTheChallengeEndpointAndTheCodeOnce() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (session, code) = try await Self.signInByCode(harness, client, "ada@example.com")
            // RFC 7636 section 4.6: a wrong verifier spends the code (it is taken out first).
            let tokens = try await Self.redeem(client, code: code)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            for member in ["access_token", "refresh_token", "id_token"] { XCTAssertNotNil(tokens.json[member], member) }
            let userinfo = try await H.call(
                client, .get, "/connect/userinfo", "", headers: [.authorization: "Bearer \(tokens.json["access_token"] as! String)"])
            XCTAssertEqual(userinfo.json["email"] as? String, "ada@example.com")
            // Used once: the code again, and the session again.
            let again = try await Self.redeem(client, code: code)
            XCTAssertEqual(again.json["error"] as? String, "invalid_grant")
            let replayed = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", "000000")])
            XCTAssertEqual(replayed.json["error"] as? String, "invalid_session")
        }
    }

    func testTheCodeNeedsItsVerifierAndItsClientAndTheSessionItsClient() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let (_, code) = try await Self.signInByCode(harness, client, "ada@example.com")
            let wrongVerifier = try await Self.redeem(client, code: code, verifier: String(repeating: "w", count: 48))
            XCTAssertEqual(wrongVerifier.json["error"] as? String, "invalid_grant")
            let spent = try await Self.redeem(client, code: code)
            XCTAssertEqual(spent.json["error"] as? String, "invalid_grant", "a wrong verifier spent the code")

            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let (_, second) = try await Self.signInByCode(harness, client, "ada@example.com", number: 2)
            let otherClient = try await Self.redeem(client, code: second, clientID: "conf")
            XCTAssertEqual(otherClient.status.code / 100, 4)
            XCTAssertNil(otherClient.json["access_token"])

            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let first = try await Self.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)])
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let code3 = try await harness.code(for: "ada@example.com", number: 3)
            let stolen = try await Self.challenge(client, [("client_id", "plain"), ("auth_session", session), ("email_code", code3)])
            XCTAssertEqual(stolen.json["error"] as? String, "invalid_session", "another client's session")
            let own = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", code3)])
            XCTAssertEqual(own.status, .ok, "the refused attempt spent nothing: \(own.body)")
        }
    }

    func testPKCEIsRequiredS256AndAWrongCodeIsTheGrantsRefusal() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            for fields in [
                [("client_id", "app"), ("login_hint", "ada@example.com")],
                [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", "short")],
                [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge), ("code_challenge_method", "plain")],
            ] {
                let refused = try await Self.challenge(client, fields)
                XCTAssertEqual(refused.status, .badRequest)
                XCTAssertEqual(refused.json["error"] as? String, "invalid_request", refused.body)
            }
            let unknownClient = try await Self.challenge(client, [("client_id", "nobody"), ("login_hint", "a@example.com"), ("code_challenge", Self.challenge)])
            XCTAssertEqual(unknownClient.json["error"] as? String, "invalid_client")
            let first = try await Self.challenge(client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)])
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            _ = try await harness.code(for: "ada@example.com")  // its mail arrived first: mails sent without a wait arrive in no set order
            let wrong = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", "000000")])
            XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant", wrong.body)
            let unknownSession = try await Self.challenge(client, [("client_id", "app"), ("auth_session", "nope"), ("email_code", "000000")])
            XCTAssertEqual(unknownSession.json["error"] as? String, "invalid_session")
            let notCode = try await Self.challenge(
                client, [("client_id", "app"), ("response_type", "token"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)])
            XCTAssertEqual(notCode.json["error"] as? String, "unsupported_response_type", notCode.body)
            // Section 5.1: a public client may leave client_id out when its auth_session names it.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let named = try await Self.challenge(
                client, [("client_id", "app"), ("response_type", "code"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)])
            let namedSession = try XCTUnwrap(named.json["auth_session"] as? String, named.body)
            let code = try await harness.code(for: "ada@example.com", number: 2)
            let anonymous = try await Self.challenge(client, [("auth_session", namedSession), ("email_code", code)])
            XCTAssertEqual(anonymous.status, .ok, anonymous.body)
        }
    }

    /// The uniform answer: an address with an account and one without get the same first answer.
    func testTheIdentifierStepDoesNotTellWhetherTheAddressHasAnAccount() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationPosture = .explicitEndpoint })
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            var answers: [String] = []
            for email in ["ada@example.com", "nobody@example.com"] {
                let reply = try await Self.challenge(client, [("client_id", "app"), ("login_hint", email), ("code_challenge", Self.challenge)])
                var body = reply.json
                XCTAssertNotNil(body.removeValue(forKey: "auth_session"))
                answers.append("\(reply.status.code) \(body.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })")
            }
            XCTAssertEqual(answers[0], answers[1])
        }
    }

    /// A usernameless passkey: the first answer carries the request options; the assertion
    /// comes back with the session, and the code signs in as the passkey grant would.
    func testAPasskeySignsInThroughTheChallengeEndpoint() async throws {
        harness = try await PasskeySignUpTests.makeHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let first = try await Self.challenge(client, [("client_id", "ios"), ("code_challenge", Self.challenge), ("scope", "openid offline_access")])
            XCTAssertEqual(first.json["error"] as? String, "insufficient_authorization", first.body)
            XCTAssertEqual(first.json["expecting"] as? [String], ["passkey_assertion"])
            let options = try XCTUnwrap(first.json["passkey_options"] as? [String: Any], first.body)
            let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let assertion = steps.authenticator.assert(&credential, .init(challenge: challenge, origin: "https://ios.acme.test"))
            let second = try await Self.challenge(client, [("client_id", "ios"), ("auth_session", session), ("passkey_assertion", steps.json(assertion))])
            XCTAssertEqual(second.status, .ok, second.body)
            let code = try XCTUnwrap(second.json["authorization_code"] as? String)
            let tokens = try await Self.redeem(client, code: code, clientID: "ios")
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            let idToken = try XCTUnwrap(tokens.json["id_token"] as? String)
            let claims = try XCTUnwrap(
                JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URLText.decode(String(idToken.split(separator: ".")[1]))))) as? [String: Any])
            XCTAssertEqual(claims["amr"] as? [String], ["hwk", "mfa"], "as the passkey grant: a verified passkey is two factors")
        }
    }

    /// Issue 46: a code's token response through the challenge endpoint carries the upgrade
    /// hint as the code grant's does, until the person has a passkey under the client's RP-ID.
    func testTheCodesTokenResponseCarriesThePasskeyUpgradeHint() async throws {
        harness = try await PasskeySignUpTests.makeHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.router) { client in
            let (_, code) = try await Self.signInByCode(harness, client, "ada@example.com", clientID: "ios")
            let tokens = try await Self.redeem(client, code: code, clientID: "ios")
            XCTAssertEqual(tokens.json["passkey_upgrade"] as? Bool, true, tokens.body)
            _ = try await steps.enroll(client, token: try XCTUnwrap(tokens.json["access_token"] as? String), origin: "https://ios.acme.test")
            let (_, second) = try await Self.signInByCode(harness, client, "ada@example.com", clientID: "ios", number: 2)
            let again = try await Self.redeem(client, code: second, clientID: "ios")
            XCTAssertEqual(again.status, .ok, again.body)
            XCTAssertNil(again.json["passkey_upgrade"], "a passkey under the RP-ID already")
        }
    }

    /// TOTP on: the email code is held in the session, the next answer asks for `totp_code`,
    /// and the right one ends in a code.
    func testASecondFactorIsAskedForAndTheHeldCodeRedeemedWithIt() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        let totp = try await EmailSignInTests.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.router) { client in
            let first = try await Self.challenge(client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)])
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let code = try await harness.code(for: "ada@example.com")
            let second = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", code)])
            XCTAssertEqual(second.json["error"] as? String, "insufficient_authorization", second.body)
            XCTAssertEqual(second.json["expecting"] as? [String], ["totp_code"])
            XCTAssertEqual(second.json["auth_session"] as? String, session)
            let wrong = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("totp_code", totp.wrong)])
            XCTAssertEqual(wrong.json["expecting"] as? [String], ["totp_code"], wrong.body)
            let third = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("totp_code", totp.current)])
            XCTAssertEqual(third.status, .ok, third.body)
            let tokens = try await Self.redeem(client, code: try XCTUnwrap(third.json["authorization_code"] as? String))
            XCTAssertEqual(tokens.status, .ok, tokens.body)
        }
    }

    /// A magic link opened by the app, brought with the session begun by its address.
    func testAMagicLinkSignsInThroughTheChallengeEndpoint() async throws {
        harness = try await EmailSignInHarness(settings: { $0.magicLinkEnabled = true })
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let first = try await Self.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("email_delivery", "link"), ("code_challenge", Self.challenge)])
            XCTAssertEqual(first.json["expecting"] as? [String], ["user_id", "magic_token"], first.body)
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let link = try await harness.magicLink(for: "ada@example.com")
            let second = try await Self.challenge(
                client, [("client_id", "app"), ("auth_session", session), ("user_id", link.userID), ("magic_token", link.token)])
            XCTAssertEqual(second.status, .ok, second.body)
            let tokens = try await Self.redeem(client, code: try XCTUnwrap(second.json["authorization_code"] as? String))
            XCTAssertEqual(tokens.status, .ok, tokens.body)
        }
    }

    /// RFC 9449 with the draft: a proof on the first request binds the session, the code and the
    /// tokens to its key. Another key, or none, cannot continue the session or redeem the code.
    func testADPoPKeyBindsTheSessionTheCodeAndTheTokens() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let challengeURL = "https://localhost/connect/authorization-challenge"
            let tokenURL = "https://localhost/connect/token"
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            let atChallenge = try DPoPProofMaker.make([["key": 1], ["key": 2], ["key": 1], ["key": 1]], htu: challengeURL, iat: iat)
            let atToken = try DPoPProofMaker.make([["key_pem": atChallenge[0].key], ["key": 3]], htu: tokenURL, iat: iat)
            func post(_ fields: [(String, String)], proof: String?, path: String = "/connect/authorization-challenge") async throws -> H.Reply {
                try await H.call(client, .post, path, Self.form(fields), headers: DPoPTokenTests.headers(proof))
            }
            let first = try await post(
                [("response_type", "code"), ("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)],
                proof: atChallenge[0].proof)
            let session = try XCTUnwrap(first.json["auth_session"] as? String, first.body)
            let code = try await harness.code(for: "ada@example.com")
            let otherKey = try await post([("client_id", "app"), ("auth_session", session), ("email_code", code)], proof: atChallenge[1].proof)
            XCTAssertEqual(otherKey.json["error"] as? String, "invalid_session", otherKey.body)
            let noKey = try await post([("client_id", "app"), ("auth_session", session), ("email_code", code)], proof: nil)
            XCTAssertEqual(noKey.json["error"] as? String, "invalid_session", noKey.body)
            let second = try await post([("client_id", "app"), ("auth_session", session), ("email_code", code)], proof: atChallenge[2].proof)
            XCTAssertEqual(second.status, .ok, second.body)
            let authorizationCode = try XCTUnwrap(second.json["authorization_code"] as? String)
            let redeem = [("grant_type", "authorization_code"), ("client_id", "app"), ("code", authorizationCode), ("code_verifier", Self.verifier)]
            let stranger = try await post(redeem, proof: atToken[1].proof, path: "/connect/token")
            XCTAssertEqual(stranger.json["error"] as? String, "invalid_grant", "another key spends the code: \(stranger.body)")

            // A second sign-in, redeemed with the session's key.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let again = try DPoPProofMaker.make([["key_pem": atChallenge[0].key], ["key_pem": atChallenge[0].key]], htu: challengeURL,
                iat: Int(harness.clock.now().timeIntervalSince1970))
            let redeemProof = try DPoPProofMaker.make([["key_pem": atChallenge[0].key]], htu: tokenURL, iat: Int(harness.clock.now().timeIntervalSince1970))
            let begun = try await post(
                [("response_type", "code"), ("client_id", "app"), ("login_hint", "ada@example.com"), ("code_challenge", Self.challenge)],
                proof: again[0].proof)
            let code2 = try await harness.code(for: "ada@example.com", number: 2)
            let ended = try await post(
                [("client_id", "app"), ("auth_session", try XCTUnwrap(begun.json["auth_session"] as? String)), ("email_code", code2)], proof: again[1].proof)
            let code3 = try XCTUnwrap(ended.json["authorization_code"] as? String, ended.body)
            let tokens = try await post(
                [("grant_type", "authorization_code"), ("client_id", "app"), ("code", code3), ("code_verifier", Self.verifier)],
                proof: redeemProof[0].proof, path: "/connect/token")
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            XCTAssertEqual(tokens.json["token_type"] as? String, "DPoP")
            let introspected = try await harness.core.tokenIntrospection.introspect(realm: "dev", token: try XCTUnwrap(tokens.json["access_token"] as? String))
            XCTAssertEqual(introspected.dpopKey, atChallenge[0].jkt, "the tokens are bound to the session's key")
        }
    }

    /// A session takes the factor it began with, for the person it named: another person's
    /// link, or a code in a session begun for a link, is refused (found by the draft-only
    /// client's probe, ops/first-party-test).
    func testASessionTakesOnlyItsFactorForItsPerson() async throws {
        harness = try await EmailSignInHarness(settings: { $0.magicLinkEnabled = true })
        let harness = harness!
        _ = try await harness.registerUser("ada@example.com")
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.router) { client in
            let first = try await Self.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("email_delivery", "link"), ("code_challenge", Self.challenge)])
            let session = try XCTUnwrap(first.json["auth_session"] as? String)
            let requested = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"bob@example.com"}"#, headers: H.json)
            XCTAssertEqual(requested.status, .ok)
            let bobs = try await harness.magicLink(for: "bob@example.com")
            let stolen = try await Self.challenge(
                client, [("client_id", "app"), ("auth_session", session), ("user_id", bobs.userID), ("magic_token", bobs.token)])
            XCTAssertEqual(stolen.json["error"] as? String, "invalid_grant", stolen.body)
            let code = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", "123456")])
            XCTAssertEqual(code.json["error"] as? String, "invalid_request", "a link session takes no code: \(code.body)")
            let odd = try await Self.challenge(
                client, [("client_id", "app"), ("login_hint", "ada@example.com"), ("email_delivery", "pigeon"), ("code_challenge", Self.challenge)])
            XCTAssertEqual(odd.json["error"] as? String, "invalid_request", odd.body)
            let adas = try await harness.magicLink(for: "ada@example.com")
            let own = try await Self.challenge(
                client, [("client_id", "app"), ("auth_session", session), ("user_id", adas.userID), ("magic_token", adas.token)])
            XCTAssertEqual(own.status, .ok, "the refusals spent nothing: \(own.body)")
            // Bob's link is still his.
            let bobSignsIn = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "app"), ("user_id", bobs.userID), ("magic_token", bobs.token)])
            XCTAssertEqual(bobSignsIn.status, .ok, bobSignsIn.body)
        }
    }
}
