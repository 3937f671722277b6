import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 46, item 4: every token tells how and when its person signed in, for RFC 9470
/// decisions: `auth_time`, `acr` and `amr` in the ID token, in a JWT access token and in
/// introspection; a refresh never moves `auth_time`. Over a real socket.
final class SignInClaimsTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func claims(_ jwt: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URL.decode(String(jwt.split(separator: ".")[1]))))) as? [String: Any])
    }

    func testCodeAndPasskeySignInsCarryTheirClaimsEverywhereAndARefreshKeepsThem() async throws {
        harness = try await PasskeyUpgradeTests.iosHarness()
        let harness = harness!
        _ = try await harness.core.administration.clients.update(realm: "dev", id: "ios", metadata: .init()) { $0.accessTokenFormat = .jwt }
        let steps = PasskeySteps(harness: harness)
        let authenticator = SoftwareAuthenticator()
        try await harness.app.test(.live) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let byCode = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), clientID: "ios")
            XCTAssertEqual(byCode.status, .ok, byCode.body)
            let idToken = try Self.claims(try XCTUnwrap(byCode.json["id_token"] as? String))
            let access = try Self.claims(try XCTUnwrap(byCode.json["access_token"] as? String))
            let introspected = try await Self.introspect(client, harness, try XCTUnwrap(byCode.json["access_token"] as? String))
            for (source, claims) in [("ID token", idToken), ("access token", access), ("introspection", introspected)] {
                XCTAssertEqual(claims["amr"] as? [String], ["otp"], source)
                XCTAssertEqual(claims["acr"] as? String, "urn:modgud:acr:single-factor", source)
                XCTAssertEqual(claims["auth_time"] as? Int, Int(harness.clock.now().timeIntervalSince1970), source)
            }
            let signedInAt = try XCTUnwrap(access["auth_time"] as? Int)

            // max_age on a refresh (RFC 9470): a sign-in older than it is refused and nothing is
            // spent; a malformed one is invalid_request.
            harness.clock.advance(20 * 60)
            let refreshToken = try XCTUnwrap(byCode.json["refresh_token"] as? String)
            let tooOld = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", refreshToken), ("max_age", "600")])
            XCTAssertEqual(tooOld.json["error"] as? String, "invalid_grant", tooOld.body)
            let malformed = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", refreshToken), ("max_age", "ten")])
            XCTAssertEqual(malformed.json["error"] as? String, "invalid_request", malformed.body)
            let young = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", refreshToken), ("max_age", "3600")])
            XCTAssertEqual(young.status, .ok, "max_age an hour: the 20-minute-old sign-in holds; nothing was spent before: \(young.body)")

            // acr_values (RFC 9470 section 4): a refresh never makes a sign-in stronger; refused
            // before anything is spent. Values Modgud does not know are voluntary.
            let tooWeak = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", try XCTUnwrap(young.json["refresh_token"] as? String)),
                    ("acr_values", "urn:modgud:acr:mfa")])
            XCTAssertEqual(tooWeak.json["error"] as? String, "invalid_grant", tooWeak.body)
            XCTAssertTrue((tooWeak.json["error_description"] as? String ?? "").contains("acr_values"), tooWeak.body)
            let strongEnough = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", try XCTUnwrap(young.json["refresh_token"] as? String)),
                    ("acr_values", "urn:example:unknown urn:modgud:acr:single-factor")])
            XCTAssertEqual(strongEnough.status, .ok, strongEnough.body)

            // A refresh a while later: a new access token with the sign-in's auth_time.
            let refreshed = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", try XCTUnwrap(strongEnough.json["refresh_token"] as? String))])
            XCTAssertEqual(refreshed.status, .ok, refreshed.body)
            let later = try Self.claims(try XCTUnwrap(refreshed.json["access_token"] as? String))
            XCTAssertEqual(later["auth_time"] as? Int, signedInAt, "a refresh never raises auth_time")
            XCTAssertGreaterThan(try XCTUnwrap(later["iat"] as? Int), signedInAt)

            // A passkey (with user verification): two factors.
            _ = try await H.requestCode(client, "ada@example.com")
            // A code without TOTP is one factor: asked for two, it is refused and stays unspent.
            let weakCode = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2), clientID: "ios",
                extra: [("acr_values", "urn:modgud:acr:mfa")])
            XCTAssertEqual(weakCode.json["error"] as? String, "invalid_grant", weakCode.body)
            let withMaxAge = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2), clientID: "ios", extra: [("max_age", "0")])
            XCTAssertEqual(withMaxAge.status, .ok, "a native grant signs in now: any max_age holds: \(withMaxAge.body)")
            let fresh = try XCTUnwrap(withMaxAge.json["access_token"] as? String)
            var (credential, _) = try await steps.enroll(client, token: fresh, origin: "https://ios.acme.test")
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
            let byPasskey = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
            let passkeyAccess = try Self.claims(try XCTUnwrap(byPasskey.json["access_token"] as? String))
            XCTAssertEqual(passkeyAccess["amr"] as? [String], ["hwk", "mfa"])
            XCTAssertEqual(passkeyAccess["acr"] as? String, "urn:modgud:acr:mfa")
        }
    }

    /// Issue 46: with the realm's passkey step-up on (issue 65: off by default), deleting a
    /// passkey needs a fresh sign-in, as enrolling does, expressed as RFC 9470's challenge; a
    /// new sign-in meets it.
    func testWithTheStepUpGuardDeletingAPasskeyNeedsAFreshSignInByTheStepUpChallenge() async throws {
        harness = try await PasskeyUpgradeTests.iosHarness()
        let harness = harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.passkeyStepUp = true }
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.live) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let first = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), clientID: "ios")
            let old = try XCTUnwrap(first.json["access_token"] as? String)
            let (_, id) = try await steps.enroll(client, token: old, origin: "https://ios.acme.test")
            harness.clock.advance(11 * 60)
            let stale = try await H.call(client, .delete, "/connect/passkey/\(id)", "", headers: PasskeySteps.bearer(old))
            XCTAssertEqual(stale.status, .unauthorized, stale.body)
            let challenge = stale.headers[.wwwAuthenticate] ?? ""
            XCTAssertTrue(challenge.contains(#"error="insufficient_user_authentication""#) && challenge.contains("max_age=600"), challenge)
            XCTAssertEqual(stale.json["title"] as? String, "Passkey.ReauthenticationRequired")
            _ = try await H.requestCode(client, "ada@example.com")
            let again = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2), clientID: "ios")
            let fresh = try XCTUnwrap(again.json["access_token"] as? String)
            let deleted = try await H.call(client, .delete, "/connect/passkey/\(id)", "", headers: PasskeySteps.bearer(fresh))
            XCTAssertEqual(deleted.status, .noContent, deleted.body)
        }
    }

    static func introspect(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, _ token: String) async throws -> [String: Any] {
        var headers = H.form
        headers[.authorization] = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
        let reply = try await H.call(
            client, .post, "/connect/introspect", "token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", headers: headers)
        XCTAssertEqual(reply.json["active"] as? Bool, true, reply.body)
        return reply.json
    }
}
