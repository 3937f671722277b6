import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// The guide's "Errors" table, row by row, as an app meets each row: every condition made
/// the way an operator or a person would make it, every answer as the table prints it.
extension SeedWalkTests {
    func testEveryRowOfTheGuidesErrorsTable() async throws {
        harness = try await SeedWalk.makeHarness()
        let harness = harness!
        let walk = SeedWalk(harness: harness)
        let admin = harness.core.administration
        // A second public client: it lacks the otp grant (its permission) and has no RP-ID.
        _ = try await admin.clients.create(
            realm: "dev", id: "no-otp", settings: ClientSettings(type: .public, grants: [.magic, .passkey], allowedScopes: ["openid"]), metadata: .init())
        try await harness.app.test(.live) { client in
            let signedIn = try await walk.signInWithCode(client, "ada@example.com", number: 1, step: "Errors: a session")
            let token = try XCTUnwrap(signedIn.json["access_token"] as? String)

            // Client lacks the gt:urn:cocoar:* permission → unauthorized_client.
            let unpermitted = try await H.call(
                client, .post, "/connect/token",
                SeedWalk.form([("grant_type", "urn:cocoar:otp"), ("client_id", "no-otp"), ("username", "ada@example.com"), ("otp_code", "123456")]),
                headers: H.form)
            XCTAssertEqual(unpermitted.json["error"] as? String, "unauthorized_client", "Errors, row 3: \(unpermitted.body)")

            // Wrong/expired code, link or assertion → invalid_grant.
            let wrong = try await walk.redeemCode(client, "ada@example.com", "000000")
            XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant", "Errors, row 4: \(wrong.body)")
            let badLink = try await H.call(
                client, .post, "/connect/token",
                SeedWalk.form([("grant_type", "urn:cocoar:magic"), ("client_id", SeedWalk.clientID), ("user_id", "\(UUID())"), ("magic_token", "nope")]),
                headers: H.form)
            XCTAssertEqual(badLink.json["error"] as? String, "invalid_grant", "Errors, row 4 (link): \(badLink.body)")

            // TOTP required but missing → invalid_grant with the guide's sentence.
            try await Self.enableTOTP(client, harness, token: token)
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            _ = try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(["Email": "ada@example.com"]), headers: H.json)
            let owed = try await walk.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2))
            XCTAssertEqual(owed.json["error"] as? String, "invalid_grant", "Errors, row 5: \(owed.body)")
            XCTAssertEqual(owed.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.", "Errors, row 5")

            // Passkey begin while the realm has no primary domain (and the client no RP-ID) → 503.
            let noRP = try await H.call(client, .post, "/connect/passkey/begin", SeedWalk.form([("client_id", "no-otp")]), headers: H.form)
            XCTAssertEqual(noRP.status, .serviceUnavailable, "Errors, row 7: \(noRP.body)")

            // Passkey list / delete without a valid Bearer token → 401.
            for (method, path) in [(HTTPRequest.Method.get, "/connect/passkey"), (.delete, "/connect/passkey/\(UUID())")] {
                let anonymous = try await H.call(client, method, path, "", headers: [:])
                XCTAssertEqual(anonymous.status, .unauthorized, "Errors, row 8: \(method) \(path)")
                let invalid = try await H.call(client, method, path, "", headers: SeedWalk.bearer("not-a-token"))
                XCTAssertEqual(invalid.status, .unauthorized, "Errors, row 8: \(method) \(path), a wrong token")
            }
            // Passkey delete of an unknown id → 404.
            let unknown = try await H.call(client, .delete, "/connect/passkey/\(UUID())", "", headers: SeedWalk.bearer(token))
            XCTAssertEqual(unknown.status, .notFound, "Errors, row 9: \(unknown.body)")

            // Rate limit hit (passkey begin) → 429, once the operator lowered the ceiling.
            _ = try await admin.realms.update("dev", metadata: .init()) {
                $0.rateLimitOverrides["passkey.ip"] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1)
            }
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 {
                statuses.append(try await H.call(client, .post, "/connect/passkey/begin", SeedWalk.form([("client_id", SeedWalk.clientID)]), headers: H.form).status)
            }
            XCTAssertTrue(statuses.contains(.tooManyRequests), "Errors, row 6: \(statuses)")

            // The realm turns native grants off: the token endpoint, the OTP request and the
            // passkey endpoints answer as the table says.
            _ = try await admin.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
            let disabled = try await walk.redeemCode(client, "ada@example.com", "123456")
            XCTAssertEqual(disabled.json["error"] as? String, "unsupported_grant_type", "Errors, row 1: \(disabled.body)")
            let request = try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(["Email": "ada@example.com"]), headers: H.json)
            XCTAssertEqual(request.status, .badRequest, "Errors, row 2: \(request.body)")
            XCTAssertTrue(request.body.contains("NativeGrants.Disabled"), "Errors, row 2: \(request.body)")
            for (method, path) in [
                (HTTPRequest.Method.post, "/connect/passkey/enroll/begin"), (.get, "/connect/passkey"), (.delete, "/connect/passkey/\(UUID())"),
            ] {
                let off = try await H.call(client, method, path, "", headers: SeedWalk.bearer(token))
                XCTAssertEqual(off.status, .badRequest, "Errors, row 10: \(method) \(path)")
                XCTAssertTrue(off.body.contains("NativeGrants.Disabled"), "Errors, row 10: \(off.body)")
            }
        }
    }

    /// TOTP as the account API enrolls it (`/api/account/totp/enroll` and `confirm`).
    static func enableTOTP(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, token: String) async throws {
        let enrollment = try await H.call(client, .post, "/api/account/totp/enroll", "", headers: SeedWalk.bearer(token, json: true))
        XCTAssertEqual(enrollment.status, .ok, enrollment.body)
        let totp = TOTP(secret: try XCTUnwrap(Base32Test.decode(try XCTUnwrap(enrollment.json["Secret"] as? String))))
        let code = totp.code(counter: totp.counter(at: harness.clock.now()))
        let confirmed = try await H.call(client, .post, "/api/account/totp/confirm", #"{"Code":"\#(code)"}"#, headers: SeedWalk.bearer(token, json: true))
        XCTAssertEqual(confirmed.status, .noContent, confirmed.body)
    }
}
