import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 41: an app built with Auth0.swift or Auth0.Android works with only its domain and
/// client id changed. Every answer of the journey such an app makes (passkey sign-up, userinfo,
/// a My Account token by refresh, enrollment, list, get, passkey login, and the errors it
/// checks) is decoded with the SDKs' own models (`Auth0SDKModels.swift`, which cites each
/// SDK file and version). auth0-python runs for real in `ops/auth0-sdk-test`.
final class Auth0SDKConformanceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let api = "https://api.acme.test"
    static let myAccount = "https://localhost/me/"
    static let myAccountScopes = ["create", "read", "update", "delete"].map { "\($0):me:authentication_methods" }
    static let json: HTTPFields = [.contentType: "application/json"]

    /// An Auth0-style app: passkeys with sign-up, a default API audience, and a refresh policy
    /// to My Account (how Auth0's SDKs get a My Account token: `renew` with its audience).
    func makeHarness(_ settings: @escaping (inout RealmSettings) -> Void = { _ in }) async throws -> EmailSignInHarness {
        let harness = try await PasskeySignUpTests.makeHarness(settings)
        var client = ClientSettings(
            type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: Set(["openid", "email", "profile", "offline_access"] + Self.myAccountScopes),
            audiences: [Self.api, Self.myAccount], rpID: "ios.acme.test", passkeySignUp: true)
        client.defaultAudience = Self.api
        client.refreshTokenPolicies = [RefreshTokenPolicy(audience: Self.myAccount, scopes: Self.myAccountScopes)]
        _ = try await harness.core.administration.clients.create(realm: "dev", id: "auth0app", settings: client, metadata: .init())
        return harness
    }

    func testAnAuth0AppsPasskeyJourneyDecodesWithTheSDKsModels() async throws {
        harness = try await makeHarness()
        let harness = harness!
        let authenticator = SoftwareAuthenticator()
        try await harness.app.test(.router) { client in
            // Sign-up challenge: Auth0.swift `PasskeySignupChallenge`, Auth0.Android `PasskeyRegistrationChallenge`.
            let register = try await H.call(
                client, .post, "/passkey/register", #"{"client_id":"auth0app","realm":"email","user_profile":{"email":"ada@example.com"}}"#,
                headers: Self.json)
            XCTAssertEqual(register.status, .ok, register.body)
            let signUpChallenge = try Auth0SDK.decode(SwiftPasskeySignupChallenge.self, register.body)
            _ = try Auth0SDK.decode(AndroidPasskeyRegistrationChallenge.self, register.body)
            let creation = try XCTUnwrap(register.json["authn_params_public_key"] as? [String: Any])
            let (credential, attestation) = try SignUpSteps.create(options: creation, authenticator: authenticator, origin: "https://ios.acme.test")

            // The webauthn grant as the SDKs send it to /oauth/token (no audience: the default).
            let signUp = try await Self.webauthnGrant(client, session: signUpChallenge.auth_session, response: attestation)
            XCTAssertEqual(signUp.status, .ok, signUp.body)
            let credentials = try Auth0SDK.decode(SwiftCredentials.self, signUp.body)
            let android = try Auth0SDK.decode(AndroidCredentials.self, signUp.body)
            XCTAssertGreaterThan(credentials.expiresIn ?? 0, 0)
            let issued = try await harness.core.tokenIntrospection.liveAccessToken(realm: "dev", token: android.access_token)
            XCTAssertEqual(issued?.audiences, [Self.api], "no audience asked: the client's default audience only, My Account not included")

            // Userinfo: Auth0.swift `UserProfile` (sub required), Auth0.Android `UserProfile`.
            let userinfo = try await H.call(client, .get, "/userinfo", "", headers: PasskeySteps.bearer(android.access_token))
            XCTAssertEqual(userinfo.status, .ok, userinfo.body)
            let profile = try Auth0SDK.decode(SwiftUserProfile.self, userinfo.body)
            XCTAssertEqual(try Auth0SDK.decode(AndroidUserProfile.self, userinfo.body).id, profile.sub)

            // A My Account token as Auth0's credentials managers get one: `renew` with its
            // audience and scope (`openid` added by the SDK), allowed by the refresh policy.
            let renewed = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(android.refresh_token ?? "")","audience":"\#(Self.myAccount)","scope":"openid \#(Self.myAccountScopes.joined(separator: " "))"}"#,
                headers: Self.json)
            XCTAssertEqual(renewed.status, .ok, renewed.body)
            let apiCredentials = try Auth0SDK.decode(AndroidCredentials.self, renewed.body)
            XCTAssertEqual(apiCredentials.scope, "openid " + Self.myAccountScopes.joined(separator: " "))
            let myAccountToken = apiCredentials.access_token
            let switched = try await harness.core.tokenIntrospection.liveAccessToken(realm: "dev", token: myAccountToken)
            XCTAssertEqual(switched?.audiences, [Self.myAccount])

            // Enrollment: `PasskeyEnrollmentChallenge` takes the method id from `Location`.
            let begun = try await H.call(client, .post, "/me/v1/authentication-methods", #"{"type":"passkey"}"#, headers: PasskeySteps.bearer(myAccountToken, json: true))
            XCTAssertEqual(begun.status, .accepted, begun.body)
            let swiftEnrollment = try SwiftPasskeyEnrollmentChallenge(location: begun.headers[.location], body: begun.body)
            let androidEnrollment = try AndroidPasskeyEnrollmentChallenge(location: begun.headers[.location], body: begun.body)
            XCTAssertEqual(swiftEnrollment.authenticationMethodID.removingPercentEncoding, "passkey|new")
            XCTAssertEqual(androidEnrollment.authenticationMethodID, "passkey|new")
            let enrollOptions = try XCTUnwrap(begun.json["authn_params_public_key"] as? [String: Any])
            let (_, second) = try SignUpSteps.create(options: enrollOptions, authenticator: authenticator, origin: "https://ios.acme.test")
            // Both SDKs put the id back as an encoded path segment.
            let verified = try await H.call(
                client, .post, "/me/v1/authentication-methods/\(swiftEnrollment.authenticationMethodID)/verify",
                #"{"auth_session":"\#(swiftEnrollment.challenge.auth_session)","authn_response":\#(second)}"#,
                headers: PasskeySteps.bearer(myAccountToken, json: true))
            XCTAssertEqual(verified.status, .created, verified.body)
            let method = try Auth0SDK.decode(SwiftPasskeyAuthenticationMethod.self, verified.body)
            _ = try Auth0SDK.decode(AndroidPasskeyAuthenticationMethod.self, verified.body)
            XCTAssertEqual(method.identityUserID, profile.sub)
            XCTAssertEqual(method.relyingPartyID, "ios.acme.test")
            XCTAssertEqual(method.userHandle, Data(try XCTUnwrap(UUID(uuidString: profile.sub)).uuidBytes))
            XCTAssertEqual(method.keyID, (try JSONSerialization.jsonObject(with: Data(second.utf8)) as? [String: Any])?["rawId"] as? String)
            XCTAssertFalse(method.publicKey.isEmpty)
            // Auth0's form: milliseconds and `Z` (`2025-01-15T10:30:00.000Z`).
            let created = try XCTUnwrap(verified.json["created_at"] as? String)
            XCTAssertNotNil(created.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/), created)
            XCTAssertEqual(verified.headers[.location]?.components(separatedBy: "/").last?.removingPercentEncoding, method.id)

            // List and get: `AuthenticationMethods` (both SDKs) and the generic method.
            let listed = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(myAccountToken))
            XCTAssertEqual(listed.status, .ok, listed.body)
            let methods = try Auth0SDK.decode(SwiftAuthenticationMethods.self, listed.body).authentication_methods
            XCTAssertEqual(methods.count, 2, "the sign-up passkey and the enrolled one")
            XCTAssertTrue(methods.allSatisfy { $0.usage == ["primary"] && $0.type == "passkey" })
            XCTAssertEqual(try Auth0SDK.decode(AndroidAuthenticationMethods.self, listed.body).authentication_methods.count, 2)
            for listedMethod in listed.json["authentication_methods"] as? [[String: Any]] ?? [] {
                let one = try JSONSerialization.data(withJSONObject: listedMethod)
                _ = try Auth0SDK.decode(SwiftPasskeyAuthenticationMethod.self, String(decoding: one, as: UTF8.self))
            }
            let encoded = method.id.replacingOccurrences(of: "|", with: "%7C")
            let got = try await H.call(client, .get, "/me/v1/authentication-methods/\(encoded)", "", headers: PasskeySteps.bearer(myAccountToken))
            XCTAssertEqual(try Auth0SDK.decode(SwiftAuthenticationMethod.self, got.body).id, method.id)

            // Login challenge and the webauthn login: `PasskeyLoginChallenge` / `PasskeyChallenge`.
            let challenge = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"auth0app"}"#, headers: Self.json)
            XCTAssertEqual(challenge.status, .ok, challenge.body)
            let login = try Auth0SDK.decode(SwiftPasskeyLoginChallenge.self, challenge.body)
            _ = try Auth0SDK.decode(AndroidPasskeyChallenge.self, challenge.body)
            var device = credential
            let assertion = authenticator.assert(
                &device, .init(challenge: try XCTUnwrap(Auth0SDK.base64URL(login.authn_params_public_key.challenge)).map { $0 }, origin: "https://ios.acme.test"))
            let signedIn = try await Self.webauthnGrant(client, session: login.auth_session, response: String(decoding: assertion.json, as: UTF8.self))
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            _ = try Auth0SDK.decode(AndroidCredentials.self, signedIn.body)
        }
    }

    func testTheErrorsAnAuth0AppChecksDecodeWithTheSDKsModels() async throws {
        harness = try await makeHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            // A wrong passwordless code: `isInvalidCredentials` in both SDKs.
            _ = try await H.call(
                client, .post, "/passwordless/start", #"{"client_id":"auth0app","connection":"email","email":"bo@example.com","send":"code"}"#,
                headers: Self.json)
            let wrong = try await H.call(
                client, .post, "/oauth/token",
                #"{"grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp","client_id":"auth0app","username":"bo@example.com","otp":"000000","realm":"email","scope":"openid"}"#,
                headers: Self.json)
            XCTAssertEqual(wrong.status, .badRequest)
            XCTAssertTrue(try Auth0SDK.decode(SwiftAuthenticationError.self, wrong.body).isInvalidCredentials, wrong.body)
            XCTAssertTrue(try Auth0SDK.decode(AndroidAuthenticationException.self, wrong.body).isInvalidCredentials)

            // An unknown refresh token: `isInvalidRefreshToken`.
            let unknown = try await H.call(
                client, .post, "/oauth/token", #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"nope"}"#, headers: Self.json)
            XCTAssertTrue(try Auth0SDK.decode(SwiftAuthenticationError.self, unknown.body).isInvalidRefreshToken, unknown.body)

            // Widening on refresh is refused by name: a scope never granted, an audience no policy allows.
            let code = try await harness.code(for: "bo@example.com")
            let signedIn = try await H.call(
                client, .post, "/oauth/token",
                #"{"grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp","client_id":"auth0app","username":"bo@example.com","otp":"\#(code)","realm":"email","scope":"openid email offline_access"}"#,
                headers: Self.json)
            let refresh = try XCTUnwrap(signedIn.json["refresh_token"] as? String, signedIn.body)
            let wider = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(refresh)","scope":"openid profile"}"#, headers: Self.json)
            XCTAssertEqual(try Auth0SDK.decode(SwiftAuthenticationError.self, wider.body).codeValue, "invalid_scope", wider.body)
            let elsewhere = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(refresh)","audience":"https://other.example"}"#, headers: Self.json)
            XCTAssertEqual(try Auth0SDK.decode(SwiftAuthenticationError.self, elsewhere.body).codeValue, "invalid_target", elsewhere.body)
            // A policy switch takes the policy's scopes only.
            let notInPolicy = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(refresh)","audience":"\#(Self.myAccount)","scope":"openid profile"}"#,
                headers: Self.json)
            XCTAssertEqual(try Auth0SDK.decode(SwiftAuthenticationError.self, notInPolicy.body).codeValue, "invalid_scope", notInPolicy.body)
            // Narrowing works, and the narrowed token carries only what was asked.
            let narrowed = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(refresh)","scope":"openid"}"#, headers: Self.json)
            XCTAssertEqual(try Auth0SDK.decode(AndroidCredentials.self, narrowed.body).scope, "openid")

            // My Account errors: `MyAccountError` / `MyAccountException`, 401 and 404.
            let anonymous = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
            XCTAssertEqual(try Auth0SDK.decode(SwiftMyAccountError.self, anonymous.body).status, 401)
            let narrowedToken = try XCTUnwrap(narrowed.json["access_token"] as? String)
            let switchedRefresh = try XCTUnwrap(narrowed.json["refresh_token"] as? String)
            let renewed = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(switchedRefresh)","audience":"\#(Self.myAccount)","scope":"openid read:me:authentication_methods"}"#,
                headers: Self.json)
            let reader = try XCTUnwrap(renewed.json["access_token"] as? String, renewed.body)
            let missing = try await H.call(client, .get, "/me/v1/authentication-methods/passkey%7C\(UUID())", "", headers: PasskeySteps.bearer(reader))
            XCTAssertEqual(missing.status, .notFound)
            XCTAssertEqual(try Auth0SDK.decode(SwiftMyAccountError.self, missing.body).status, 404)
            XCTAssertEqual(try Auth0SDK.decode(AndroidMyAccountException.self, missing.body).title, "MyAccount.NotFound")
            // The API token carries no My Account scope: 403 insufficient_scope (issue 65: the
            // audience itself is checked only with the realm's audience guard on).
            let wrongAudience = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(narrowedToken))
            XCTAssertEqual(try Auth0SDK.decode(SwiftMyAccountError.self, wrongAudience.body).title, "insufficient_scope")
        }
    }

    /// 429s on Auth0's paths: Auth0's `too_many_requests` body and `X-RateLimit-*` headers
    /// (auth0-python's `RateLimitError.reset_at` reads the reset as Unix seconds); on My
    /// Account, a problem with the same headers.
    func testRateLimitsAnswerAsAuth0Does() async throws {
        harness = try await makeHarness {
            $0.rateLimitOverrides[RateLimitPolicy.requestPerIP.name] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1)
            $0.rateLimitOverrides[RateLimitPolicy.passkeyPerIP.name] = RateLimitSetting(limit: 1, windowSeconds: 300, burst: 1)
        }
        let harness = harness!
        try await harness.app.test(.router) { client in
            // The one code request the limit allows, redeemed for a My Account token.
            let token = try await MyAccountTests.signIn(harness, client, "a@example.com", scopes: Self.myAccountScopes, audience: Self.myAccount)
            let refused = try await H.call(
                client, .post, "/passwordless/start", #"{"client_id":"auth0app","connection":"email","email":"b@example.com","send":"code"}"#,
                headers: Self.json)
            XCTAssertEqual(refused.status, .tooManyRequests, refused.body)
            let error = try Auth0SDK.decode(SwiftAuthenticationError.self, refused.body)
            XCTAssertEqual(error.codeValue, "too_many_requests")
            XCTAssertEqual(error.message, "Too many requests. Check the X-RateLimit-* headers.")
            Self.assertAuth0RateLimitHeaders(refused, limit: 1)

            // The passkey limit: one challenge, then My Account's problem and Auth0's body.
            let first = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"auth0app"}"#, headers: Self.json)
            XCTAssertEqual(first.status, .ok, first.body)
            let enrollment = try await H.call(client, .post, "/me/v1/authentication-methods", #"{"type":"passkey"}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(enrollment.status, .tooManyRequests, enrollment.body)
            XCTAssertEqual(enrollment.headers[.contentType], "application/problem+json")
            XCTAssertEqual(try Auth0SDK.decode(SwiftMyAccountError.self, enrollment.body).title, "too_many_requests")
            Self.assertAuth0RateLimitHeaders(enrollment, limit: 1)
            let second = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"auth0app"}"#, headers: Self.json)
            XCTAssertEqual(second.status, .tooManyRequests)
            XCTAssertEqual(try Auth0SDK.decode(SwiftAuthenticationError.self, second.body).codeValue, "too_many_requests")
        }
    }

    static func assertAuth0RateLimitHeaders(_ reply: H.Reply, limit: Int, file: StaticString = #filePath, line: UInt = #line) {
        let reset = Int(reply.headers[HTTPField.Name("X-RateLimit-Reset")!] ?? "") ?? 0
        XCTAssertGreaterThan(reset, Int(Date().timeIntervalSince1970), "X-RateLimit-Reset is a Unix time ahead", file: file, line: line)
        XCTAssertEqual(reply.headers[HTTPField.Name("X-RateLimit-Limit")!], String(limit), file: file, line: line)
        XCTAssertEqual(reply.headers[HTTPField.Name("X-RateLimit-Remaining")!], "0", file: file, line: line)
        XCTAssertNotNil(reply.headers[.retryAfter], file: file, line: line)
    }

    /// The webauthn grant as Auth0.swift and Auth0.Android send it: JSON to /oauth/token,
    /// `openid` in the scope, `authn_response` the credential's JSON.
    static func webauthnGrant(_ client: some TestClientProtocol, session: String, response: String) async throws -> H.Reply {
        try await H.call(
            client, .post, "/oauth/token",
            #"{"grant_type":"urn:okta:params:oauth:grant-type:webauthn","client_id":"auth0app","scope":"openid profile email offline_access","auth_session":"\#(session)","authn_response":\#(response)}"#,
            headers: json)
    }
}
