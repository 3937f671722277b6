import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 11: session limits as realm settings, set over the admin API and enforced at the
/// token endpoint: the refresh reuse grace and the absolute lifetime.
final class SessionLimitsTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    static let admin: HTTPFields = [.authorization: "Bearer \(EmailSignInHarness.adminToken)", .contentType: "application/json"]

    override func tearDown() async throws {
        await harness?.close()
    }

    private static func signIn(_ client: some TestClientProtocol, _ harness: EmailSignInHarness) async throws -> String {
        _ = try await H.requestCode(client, "ada@example.com")
        let tokens = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
        return try XCTUnwrap(tokens.json["refresh_token"] as? String)
    }

    private static func refresh(_ client: some TestClientProtocol, _ token: String) async throws -> H.Reply {
        try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", token)])
    }

    func testWithAGraceTwoConcurrentRefreshesBothSucceedAndTheSessionLives() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let patched = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"SessionLimits":{"RefreshReuseGraceSeconds":30}}"#, headers: Self.admin)
            XCTAssertEqual(patched.status, .ok)
            XCTAssertEqual(
                ((patched.json["Realm"] as? [String: Any])?["SessionLimits"] as? [String: Int]),
                ["AbsoluteLifetimeDays": 90, "RefreshReuseGraceSeconds": 30, "EnrollmentFreshnessMinutes": 10])
            let token = try await Self.signIn(client, harness)
            async let first = Self.refresh(client, token)
            async let second = Self.refresh(client, token)
            let answers = try await [first, second]
            XCTAssertEqual(answers.map(\.status), [.ok, .ok], "two refreshes at once: both answered")
            let kept = try XCTUnwrap(answers[1].json["refresh_token"] as? String)
            let next = try await Self.refresh(client, kept)
            XCTAssertEqual(next.status, .ok, "whichever answer the app kept still works")
            let other = try XCTUnwrap(answers[0].json["refresh_token"] as? String)
            let late = try await Self.refresh(client, other)
            XCTAssertEqual(late.json["error"] as? String, "invalid_grant", "the other answer's token was retired when one was used")
        }
    }

    func testStrictByDefaultASecondPresentationRevokes() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let token = try await Self.signIn(client, harness)
            let first = try await Self.refresh(client, token)
            XCTAssertEqual(first.status, .ok)
            let again = try await Self.refresh(client, token)
            XCTAssertEqual(again.json["error"] as? String, "invalid_grant")
            let newer = try await Self.refresh(client, try XCTUnwrap(first.json["refresh_token"] as? String))
            XCTAssertEqual(newer.json["error"] as? String, "invalid_grant", "reuse revoked the family")
        }
    }

    func testASignInEndsAfterItsAbsoluteLifetimeHoweverOftenItIsRefreshed() async throws {
        harness = try await EmailSignInHarness(settings: { $0.sessionLimits.absoluteLifetimeDays = 20 })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            var token = try await Self.signIn(client, harness)
            for _ in 0..<2 {  // day 9 and day 18: each refresh token lives 14 days
                harness.clock.advance(9 * 86400)
                let answer = try await Self.refresh(client, token)
                XCTAssertEqual(answer.status, .ok)
                token = try XCTUnwrap(answer.json["refresh_token"] as? String)
            }
            harness.clock.advance(2 * 86400 + 60)  // day 20 and a minute
            let ended = try await Self.refresh(client, token)
            XCTAssertEqual(ended.json["error"] as? String, "invalid_grant", "past the absolute lifetime, rotation does not help")
        }
        let refused = try await harness.core.pool.query(
            "SELECT count(*) FROM refresh_tokens WHERE expires_at > (SELECT min(started_at) FROM token_families) + interval '20 days 1 second'"
        ).first!.decode(Int.self, at: 0)
        XCTAssertEqual(refused, 0, "no refresh token expires after the session's end")
    }
}
