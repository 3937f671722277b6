import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 65: the endpoints that change an account take the token the native-app guide tells
/// the app to send, "the same access token the app already holds", whatever `resource` narrowed
/// it to; a token of another realm and a client's own token (client credentials) are refused.
/// The realm's `AccountGuards.accountAudience` (issue 44's rule, RFC 9700 sections 2.3 and
/// 4.10.1) is the operator's choice: on, only a token for the app or My Account is taken, so an
/// API cannot replay a token minted for it there. Userinfo takes any user token either way.
final class AccountAudienceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let api = "https://api.acme.test"

    static let accountCalls: [(HTTPRequest.Method, String, String)] = [
        (.get, "/connect/passkey", ""), (.post, "/connect/passkey/enroll/begin", "{}"),
        (.post, "/api/account/totp/enroll", ""), (.post, "/api/account/email/confirm/request", ""),
    ]

    func makeHarness() async throws -> EmailSignInHarness {
        let harness = try await MyAccountTests.makeHarness()
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "apiapp",
            settings: ClientSettings(
                type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "email", "offline_access"],
                audiences: [Self.api, MyAccountTests.audience]),
            metadata: .init())
        return harness
    }

    func testByDefaultATokenNarrowedToAnAPIManagesTheAccountAsTheGuideSays() async throws {
        harness = try await makeHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let forAPI = try await MyAccountTests.signIn(harness, client, "ada@example.com", scopes: [], audience: Self.api, clientID: "apiapp")
            for (method, path, body) in Self.accountCalls {
                let served = try await H.call(client, method, path, body, headers: PasskeySteps.bearer(forAPI, json: !body.isEmpty))
                XCTAssertEqual(served.status, .ok, "\(method) \(path): \(served.body)")
            }
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(forAPI))
            XCTAssertEqual(userinfo.status, .ok, userinfo.body)
        }
    }

    func testAClientsOwnTokenAndAnotherRealmsTokenAreRefusedWhateverTheGuards() async throws {
        harness = try await makeHarness()
        let harness = harness!
        let admin = harness.core.administration
        let (_, secret) = try await admin.clients.create(
            realm: "dev", id: "svc", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]),
            metadata: .init())
        let service = try await harness.core.clientAuthenticator.authenticate(realm: "dev", clientID: "svc", secret: secret)
        let serviceToken = try await harness.core.clientCredentials.clientCredentials(
            client: service, scope: "api", resources: [], issuer: "https://localhost", metadata: .init()).accessToken
        // Another realm on another host, with its own client and person.
        var other = RealmSettings(hosts: ["other.test"], displayName: "Other", nativeGrants: NativeGrantSettings(enabled: true))
        other.registrationPosture = .jitOnOtp
        _ = try await admin.realms.create("other", settings: other, metadata: .init())
        try await harness.core.keys.rotate(realm: "other", now: Date(), metadata: .init())
        _ = try await admin.clients.create(
            realm: "other", id: "app", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"]),
            metadata: .init())
        let person = try await admin.users.create(realm: "other", email: "ada@example.com", metadata: .init()).id
        let otherApp = try await harness.core.clientAuthenticator.authenticate(realm: "other", clientID: "app", secret: nil)
        let otherToken = try await harness.core.tokenService.signIn(
            client: otherApp, user: try await admin.users.state(realm: "other", id: person), grantType: .otp, scope: "openid offline_access",
            resources: [], amr: ["otp"], issuer: "https://other.test", metadata: .init()
        ).accessToken
        try await harness.app.test(.router) { client in
            for token in [serviceToken, otherToken] {
                for (method, path, body) in Self.accountCalls {
                    let refused = try await H.call(client, method, path, body, headers: PasskeySteps.bearer(token, json: !body.isEmpty))
                    XCTAssertEqual(refused.status, .unauthorized, "\(method) \(path): \(refused.body)")
                    XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true, "\(path)")
                }
            }
        }
    }

    func testWithTheAudienceGuardOnAnAPIsTokenCannotChangeTheAccount() async throws {
        harness = try await makeHarness()
        let harness = harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.accountAudience = true }
        try await harness.app.test(.router) { client in
            let forAPI = try await MyAccountTests.signIn(harness, client, "ada@example.com", scopes: [], audience: Self.api, clientID: "apiapp")
            for (method, path, body) in Self.accountCalls {
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
