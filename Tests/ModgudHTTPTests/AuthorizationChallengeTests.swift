import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudHTTP
@testable import ModgudService
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

    static func challenge(_ client: some TestClientProtocol, _ fields: [(String, String)]) async throws -> H.Reply {
        try await H.call(client, .post, "/connect/authorization-challenge", form(fields), headers: H.form)
    }

    /// The whole email-code exchange: identifier, code, authorization code, tokens.
    static func signInByCode(
        _ harness: EmailSignInHarness, _ client: some TestClientProtocol, _ email: String, clientID: String = "app", number: Int = 1
    ) async throws -> (session: String, code: String) {
        let first = try await challenge(
            client, [("client_id", clientID), ("login_hint", email), ("code_challenge", Self.challenge), ("code_challenge_method", "S256"),
                     ("scope", "openid email offline_access")])
        XCTAssertEqual(first.status, .badRequest, first.body)
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
            let wrong = try await Self.challenge(client, [("client_id", "app"), ("auth_session", session), ("email_code", "000000")])
            XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant", wrong.body)
            let unknownSession = try await Self.challenge(client, [("client_id", "app"), ("auth_session", "nope"), ("email_code", "000000")])
            XCTAssertEqual(unknownSession.json["error"] as? String, "invalid_session")
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
}
