import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import WebAuthn
import XCTest

/// Issue 40 item 4: the second factor must not burn the first. With TOTP on, a magic link, an
/// email code (`urn:cocoar:otp`) and Auth0's passwordless code survive a missing or wrong
/// `totp_code`, so the retry with the right one signs in; wrong TOTP codes count against the
/// link or code (`EmailChallenge.maxAttempts` burn it); only a complete sign-in spends it.
/// Through HTTP, real PostgreSQL and real SMTP, like the rest of `EmailSignInTests`.
extension EmailSignInTests {
    /// Seed 001's one answer for a missing and a wrong `totp_code`.
    static let secondFactorRequired = "Two-factor authentication is required; supply totp_code."

    // MARK: (1) and (5): a missing totp_code, then the right one; the sign-in spends the proof

    func testAMissingTOTPLeavesTheMagicLinkLiveAndTheRetrySignsIn() async throws {
        try await missingSecondFactorThenRight(.magicLink)
    }

    func testAMissingTOTPLeavesTheEmailCodeLiveAndTheRetrySignsIn() async throws {
        try await missingSecondFactorThenRight(.emailCode)
    }

    func testAMissingTOTPLeavesTheAuth0PasswordlessCodeLiveAndTheRetrySignsIn() async throws {
        try await missingSecondFactorThenRight(.auth0Code)
    }

    // MARK: (2): wrong totp_codes within the attempt limit, then the right one

    func testWrongTOTPsWithinTheLimitLeaveTheMagicLinkLive() async throws {
        try await wrongSecondFactorsThenRight(.magicLink)
    }

    func testWrongTOTPsWithinTheLimitLeaveTheEmailCodeLive() async throws {
        try await wrongSecondFactorsThenRight(.emailCode)
    }

    func testWrongTOTPsWithinTheLimitLeaveTheAuth0PasswordlessCodeLive() async throws {
        try await wrongSecondFactorsThenRight(.auth0Code)
    }

    // MARK: (3): the attempt limit of wrong totp_codes burns the proof

    func testWrongTOTPsUpToTheLimitBurnTheMagicLink() async throws {
        try await wrongSecondFactorsBurn(.magicLink)
    }

    func testWrongTOTPsUpToTheLimitBurnTheEmailCode() async throws {
        try await wrongSecondFactorsBurn(.emailCode)
    }

    func testWrongTOTPsUpToTheLimitBurnTheAuth0PasswordlessCode() async throws {
        try await wrongSecondFactorsBurn(.auth0Code)
    }

    // MARK: Races and the account gate on the magic link

    /// Exactly one of many right redemptions (link and TOTP code) wins; the database decides.
    func testConcurrentRightRedemptionsOfAMagicLinkWithTOTPSignInOnce() async throws {
        harness = try await EmailSignInHarness(maxConnections: 40)
        let harness = self.harness!
        let authenticator = try await Self.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.router) { client in
            let proof = try await Self.mailProof(.magicLink, client, harness, to: "ada@example.com")
            Self.assertRefused(try await Self.redeem(client, proof, totp: nil), Self.secondFactorRequired)
            let code = authenticator.current
            let replies = try await withThrowingTaskGroup(of: H.Reply.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await Self.redeem(client, proof, totp: code) }
                }
                return try await group.reduce(into: [H.Reply]()) { $0.append($1) }
            }
            XCTAssertEqual(replies.filter { $0.status == .ok }.count, 1, replies.map(\.body).joined(separator: "\n"))
            for reply in replies where reply.status != .ok {
                XCTAssertEqual(reply.status, .badRequest)
                XCTAssertEqual(reply.json["error"] as? String, "invalid_grant", reply.body)
            }
        }
        let events = try await Self.signInEvents(harness)
        XCTAssertEqual(events.filter { $0 == "token_family.started" }.count, 1, "one sign-in")
        XCTAssertEqual(events.filter { $0 == "challenge.consumed" }.count, 1)
        XCTAssertEqual(events.filter { $0 == "user.totp_step_accepted" }.count, 1, "the TOTP step is spent once")
    }

    /// The account is checked before the link is tried too: a disabled account's right link
    /// answers so, and the link is not spent.
    func testADisabledAccountIsRefusedWithoutSpendingTheMagicLink() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let userID = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let proof = try await Self.mailProof(.magicLink, client, harness, to: "ada@example.com")
            _ = try await harness.core.administration.users.apply(.disable, realm: "dev", userID: userID, metadata: .init())
            let before = try await Self.signInEvents(harness)
            Self.assertRefused(try await Self.redeem(client, proof, totp: nil), "The account cannot sign in.")
            let after = try await Self.signInEvents(harness)
            XCTAssertEqual(after, before, "nothing written: the link is not spent")
        }
    }

    // MARK: Scenarios

    /// A missing `totp_code` writes nothing, however often (it guesses nothing); the retry with
    /// the right code signs in with MFA and spends the proof, which a fresh TOTP code then
    /// does not bring back.
    private func missingSecondFactorThenRight(_ factor: FirstFactor) async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let authenticator = try await Self.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.router) { client in
            let proof = try await Self.mailProof(factor, client, harness, to: "ada@example.com")
            let before = try await Self.signInEvents(harness)
            for _ in 0...EmailChallenge.maxAttempts {
                Self.assertRefused(try await Self.redeem(client, proof, totp: nil), Self.secondFactorRequired)
            }
            let afterMissing = try await Self.signInEvents(harness)
            XCTAssertEqual(afterMissing, before, "\(factor): a missing second factor writes nothing")

            let signedIn = try await Self.redeem(client, proof, totp: authenticator.current)
            XCTAssertEqual(signedIn.status, .ok, "\(factor): the retry with the right code signs in: \(signedIn.body)")
            XCTAssertEqual(try Self.amr(signedIn), factor.amr)
            let afterSignIn = try await Self.signInEvents(harness)
            XCTAssertEqual(
                afterSignIn.dropFirst(before.count).sorted(), ["challenge.consumed", "token_family.started", "user.totp_step_accepted"],
                "\(factor): spent with the TOTP step and the new family")

            // (5) Spent by the complete sign-in: the next step's right code does not redeem it again.
            harness.clock.advance(30)
            Self.assertRefused(try await Self.redeem(client, proof, totp: authenticator.current), factor.invalid)
        }
    }

    /// Wrong `totp_code`s below the limit each count one failed attempt and answer like a
    /// missing one; the right code then signs in.
    private func wrongSecondFactorsThenRight(_ factor: FirstFactor) async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let authenticator = try await Self.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.router) { client in
            let proof = try await Self.mailProof(factor, client, harness, to: "ada@example.com")
            let before = try await Self.signInEvents(harness)
            for _ in 1..<EmailChallenge.maxAttempts {
                Self.assertRefused(try await Self.redeem(client, proof, totp: authenticator.wrong), Self.secondFactorRequired)
            }
            let afterWrong = try await Self.signInEvents(harness)
            XCTAssertEqual(
                Array(afterWrong.dropFirst(before.count)), Array(repeating: "challenge.attempt_failed", count: EmailChallenge.maxAttempts - 1),
                "\(factor): each wrong TOTP code is a counted attempt")

            let signedIn = try await Self.redeem(client, proof, totp: authenticator.current)
            XCTAssertEqual(signedIn.status, .ok, "\(factor): within the limit the right code signs in: \(signedIn.body)")
            XCTAssertEqual(try Self.amr(signedIn), factor.amr)

            harness.clock.advance(30)
            Self.assertRefused(try await Self.redeem(client, proof, totp: authenticator.current), factor.invalid)
        }
    }

    /// `EmailChallenge.maxAttempts` wrong `totp_code`s burn the proof: the right TOTP code with
    /// it is refused after, and nothing signs in.
    private func wrongSecondFactorsBurn(_ factor: FirstFactor) async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let authenticator = try await Self.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.router) { client in
            let proof = try await Self.mailProof(factor, client, harness, to: "ada@example.com")
            let before = try await Self.signInEvents(harness)
            for _ in 1...EmailChallenge.maxAttempts {
                Self.assertRefused(try await Self.redeem(client, proof, totp: authenticator.wrong), Self.secondFactorRequired)
            }
            let afterWrong = try await Self.signInEvents(harness)
            XCTAssertEqual(afterWrong.dropFirst(before.count).last, "challenge.burned", "\(factor): burned at the limit")

            Self.assertRefused(try await Self.redeem(client, proof, totp: authenticator.current), factor.invalid)
            Self.assertRefused(try await Self.redeem(client, proof, totp: nil), factor.invalid)
            let afterRight = try await Self.signInEvents(harness)
            XCTAssertEqual(afterRight, afterWrong, "\(factor): nothing signs in with a burned proof")
        }
    }

    // MARK: Helpers

    /// The three sign-ins a second factor guards, by `grant_type`.
    enum FirstFactor: String, Sendable, CustomStringConvertible {
        case magicLink = "urn:cocoar:magic"
        case emailCode = "urn:cocoar:otp"
        case auth0Code = "http://auth0.com/oauth/grant-type/passwordless/otp"

        var description: String { rawValue }

        /// The answer to a spent, burned or wrong proof (Auth0's grant in Auth0's words, which
        /// its SDKs' `isInvalidCredentials` tests: issue 41).
        var invalid: String {
            switch self {
            case .magicLink: "Invalid or expired link."
            case .emailCode: "Invalid or expired code."
            case .auth0Code: "Wrong email or verification code."
            }
        }

        /// The ID token's `amr` of a sign-in with TOTP.
        var amr: [String] { ["otp", "mfa"] }
    }

    /// A mailed proof: the token request's fields for it, without `totp_code`.
    struct MailedProof: Sendable {
        var factor: FirstFactor
        var fields: [(String, String)]
    }

    /// The user's authenticator app: the code the server accepts now, and one it does not.
    struct TOTPApp: Sendable {
        let totp: TOTP
        let clock: TestClock

        var current: String { totp.code(counter: totp.counter(at: clock.now())) }

        /// Six digits that match none of the steps accepted now (the current one, ±1).
        var wrong: String {
            let counter = totp.counter(at: clock.now())
            let accepted = Set([counter - 1, counter, counter + 1].map { totp.code(counter: $0) })
            return ["000000", "111111", "222222", "333333"].first { !accepted.contains($0) } ?? "444444"
        }
    }

    /// TOTP on for the user, as an operator turns it on; the app holds the handed-over secret.
    static func turnOnTOTP(_ harness: EmailSignInHarness, user: UUID) async throws -> TOTPApp {
        let provisioning = try await harness.core.administration.users.enableTOTP(realm: "dev", userID: user, metadata: .init())
        return TOTPApp(totp: TOTP(secret: try XCTUnwrap(Base32Test.decode(provisioning.secret))), clock: harness.clock)
    }

    /// Asks for the proof the way an app does for each grant and reads it from the mail.
    static func mailProof(_ factor: FirstFactor, _ client: some TestClientProtocol, _ harness: EmailSignInHarness, to email: String)
        async throws -> MailedProof
    {
        switch factor {
        case .magicLink:
            let request = try await H.call(client, .post, "/api/account/magic-link/request", H.jsonBody(["Email": email]), headers: H.json)
            XCTAssertEqual(request.status, .ok, request.body)
            let link = try await harness.magicLink(for: email)
            return MailedProof(
                factor: factor,
                fields: [("grant_type", factor.rawValue), ("client_id", "app"), ("user_id", link.userID), ("magic_token", link.token), ("scope", "openid")])
        case .emailCode:
            let request = try await H.requestCode(client, email)
            XCTAssertEqual(request.status, .ok, request.body)
            let code = try await harness.code(for: email)
            return MailedProof(
                factor: factor, fields: [("grant_type", factor.rawValue), ("client_id", "app"), ("username", email), ("otp_code", code), ("scope", "openid")])
        case .auth0Code:
            let start = try await H.call(
                client, .post, "/passwordless/start", H.jsonBody(["client_id": "app", "connection": "email", "email": email, "send": "code"]),
                headers: Auth0PasswordlessTests.sdkHeaders)
            XCTAssertEqual(start.status, .ok, start.body)
            let code = try await harness.code(for: email)
            return MailedProof(
                factor: factor,
                fields: [("grant_type", factor.rawValue), ("client_id", "app"), ("username", email), ("otp", code), ("realm", "email"), ("scope", "openid")])
        }
    }

    /// Redeems the proof, with `totp_code` when given: Modgud's grants as a form to
    /// /connect/token, Auth0's as its SDKs send it (JSON to /oauth/token).
    static func redeem(_ client: some TestClientProtocol, _ proof: MailedProof, totp: String?) async throws -> H.Reply {
        var fields = proof.fields
        if let totp { fields.append(("totp_code", totp)) }
        guard proof.factor == .auth0Code else { return try await H.token(client, fields) }
        let members = Dictionary(fields, uniquingKeysWith: { _, last in last })
        return try await H.call(client, .post, "/oauth/token", H.jsonBody(members), headers: Auth0PasswordlessTests.sdkHeaders)
    }

    static func assertRefused(_ reply: H.Reply, _ description: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(reply.status, .badRequest, reply.body, file: file, line: line)
        XCTAssertEqual(reply.json["error"] as? String, "invalid_grant", reply.body, file: file, line: line)
        XCTAssertEqual(reply.json["error_description"] as? String, description, reply.body, file: file, line: line)
    }

    /// The sign-in's events in commit order: the challenges', the TOTP steps', new families.
    static func signInEvents(_ harness: EmailSignInHarness) async throws -> [String] {
        let types = try await harness.core.pool.query("SELECT type FROM events ORDER BY position").rows.map { try $0.decode(String.self, at: 0) }
        return types.filter { $0.hasPrefix("challenge.") || $0 == "user.totp_step_accepted" || $0 == "token_family.started" }
    }

    /// The `amr` of the reply's ID token.
    static func amr(_ reply: H.Reply) throws -> [String]? {
        let idToken = try XCTUnwrap(reply.json["id_token"] as? String, reply.body)
        let parts = idToken.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        let payload = try XCTUnwrap(Base64URL.decode(String(parts[1])))
        let claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        return claims["amr"] as? [String]
    }
}
