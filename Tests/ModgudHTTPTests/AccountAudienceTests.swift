import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 44 (RFC 9700 sections 2.3 and 4.10.1): the endpoints that change an account take a
/// token for the app itself or for My Account. A token minted for an API is refused there, so
/// the API that receives it cannot replay it to enroll or delete the person's passkeys or
/// second factor. Userinfo still takes any token with `openid` (OpenID Connect Core 5.3).
final class AccountAudienceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let api = "https://api.acme.test"

    func testAnAPIsTokenCannotChangeTheAccount() async throws {
        harness = try await MyAccountTests.makeHarness()
        let harness = harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "apiapp",
            settings: ClientSettings(
                type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "email", "offline_access"],
                audiences: [Self.api, MyAccountTests.audience]),
            metadata: .init())
        try await harness.app.test(.router) { client in
            let forAPI = try await MyAccountTests.signIn(harness, client, "ada@example.com", scopes: [], audience: Self.api, clientID: "apiapp")
            for (method, path, body) in [
                (HTTPRequest.Method.get, "/connect/passkey", ""), (.post, "/connect/passkey/enroll/begin", "{}"),
                (.post, "/api/account/totp/enroll", ""), (.post, "/api/account/email/confirm/request", ""),
            ] {
                let refused = try await H.call(client, method, path, body, headers: PasskeySteps.bearer(forAPI, json: !body.isEmpty))
                XCTAssertEqual(refused.status, .unauthorized, "\(method) \(path): \(refused.body)")
                XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true, "\(path)")
                XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains("another audience") == true, "\(path)")
            }
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(forAPI))
            XCTAssertEqual(userinfo.status, .ok, userinfo.body)

            // Without `audience` the token is for the app itself; with My Account's, for My Account.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let forApp = try await MyAccountTests.signIn(harness, client, "ada@example.com", scopes: [], audience: nil, number: 2, clientID: "apiapp")
            let listed = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(forApp))
            XCTAssertEqual(listed.status, .ok, listed.body)
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let forMe = try await MyAccountTests.signIn(
                harness, client, "ada@example.com", scopes: [], audience: MyAccountTests.audience, number: 3, clientID: "apiapp")
            let mine = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(forMe))
            XCTAssertEqual(mine.status, .ok, mine.body)
        }
    }
}
