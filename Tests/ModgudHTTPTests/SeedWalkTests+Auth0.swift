import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Seed 002, Auth0's Native Passkeys API, as its pages print the requests: sign-up, a My
/// Account enrollment eleven minutes into the session with the token Auth0's SDKs get by a
/// refresh, and login; each answer decoded with Auth0.swift's and Auth0.Android's models.
extension SeedWalkTests {
    /// The Auth0 app's client: passkey sign-up, the API as its default audience, and My Account
    /// reached by a refresh (Auth0's multi-resource refresh policy), as an Auth0 tenant with
    /// the My Account API enabled is set up.
    static func addAuth0App(_ harness: EmailSignInHarness) async throws {
        var client = ClientSettings(
            type: .public, grants: [.otp, .passkey, .refreshToken],
            allowedScopes: Set(["openid", "email", "profile", "offline_access"] + SeedWalk.myAccountScopes), audiences: [SeedWalk.api, SeedWalk.myAccount],
            rpID: SeedWalk.rpID, passkeySignUp: true)
        client.defaultAudience = SeedWalk.api
        client.refreshTokenPolicies = [RefreshTokenPolicy(audience: SeedWalk.myAccount, scopes: SeedWalk.myAccountScopes)]
        _ = try await harness.core.administration.clients.create(realm: "dev", id: "auth0app", settings: client, metadata: .init())
    }

    func testAuth0sNativePasskeysAPIWalksThroughOnADefaultRealm() async throws {
        harness = try await SeedWalk.makeHarness()
        let harness = harness!
        try await Self.addAuth0App(harness)
        let authenticator = SoftwareAuthenticator()
        let json: HTTPFields = [.contentType: "application/json"]
        try await harness.app.test(.live) { client in
            // Signup Flow: "Request Signup Challenge", then "Authenticate New User".
            let register = try await H.call(
                client, .post, "/passkey/register", #"{"client_id":"auth0app","user_profile":{"email":"grace@example.com","name":"Grace"}}"#, headers: json)
            XCTAssertEqual(register.status, .ok, "002 Signup: challenge: \(register.body)")
            let signUp = try Auth0SDK.decode(SwiftPasskeySignupChallenge.self, register.body)
            _ = try Auth0SDK.decode(AndroidPasskeyRegistrationChallenge.self, register.body)
            let creation = try XCTUnwrap(register.json["authn_params_public_key"] as? [String: Any], "002 Signup")
            let (credential, attestation) = try SignUpSteps.create(options: creation, authenticator: authenticator, origin: SeedWalk.origin)
            let created = try await Auth0SDKConformanceTests.webauthnGrant(client, session: signUp.auth_session, response: attestation)
            XCTAssertEqual(created.status, .ok, "002 Signup: token: \(created.body)")
            let credentials = try Auth0SDK.decode(AndroidCredentials.self, created.body)
            _ = try Auth0SDK.decode(SwiftCredentials.self, created.body)

            // Enrollment Flow, eleven minutes later, with the My Account token of a refresh.
            harness.clock.advance(11 * 60)
            let renewed = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"auth0app","grant_type":"refresh_token","refresh_token":"\#(try XCTUnwrap(credentials.refresh_token))","audience":"\#(SeedWalk.myAccount)","scope":"openid \#(SeedWalk.myAccountScopes.joined(separator: " "))"}"#,
                headers: json)
            XCTAssertEqual(renewed.status, .ok, "002 Enrollment: the My Account token by refresh: \(renewed.body)")
            let myAccount = try Auth0SDK.decode(AndroidCredentials.self, renewed.body).access_token
            let begun = try await H.call(client, .post, "/me/v1/authentication-methods", #"{"type":"passkey"}"#, headers: SeedWalk.bearer(myAccount, json: true))
            XCTAssertEqual(begun.status, .accepted, "002 Enrollment: Initiate Passkey Enrollment at 11 minutes: \(begun.body)")
            let enrollment = try SwiftPasskeyEnrollmentChallenge(location: begun.headers[.location], body: begun.body)
            _ = try AndroidPasskeyEnrollmentChallenge(location: begun.headers[.location], body: begun.body)
            let options = try XCTUnwrap(begun.json["authn_params_public_key"] as? [String: Any], "002 Enrollment")
            let (_, second) = try SignUpSteps.create(options: options, authenticator: authenticator, origin: SeedWalk.origin)
            let verified = try await H.call(
                client, .post, "/me/v1/authentication-methods/\(enrollment.authenticationMethodID)/verify",
                #"{"auth_session":"\#(enrollment.challenge.auth_session)","authn_response":\#(second)}"#, headers: SeedWalk.bearer(myAccount, json: true))
            XCTAssertEqual(verified.status, .created, "002 Enrollment: Verify Passkey Enrollment: \(verified.body)")
            _ = try Auth0SDK.decode(SwiftPasskeyAuthenticationMethod.self, verified.body)
            _ = try Auth0SDK.decode(AndroidPasskeyAuthenticationMethod.self, verified.body)

            // Login Flow: "Request Login Challenge", then the webauthn grant.
            let challenge = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"auth0app"}"#, headers: json)
            XCTAssertEqual(challenge.status, .ok, "002 Login: challenge: \(challenge.body)")
            let login = try Auth0SDK.decode(SwiftPasskeyLoginChallenge.self, challenge.body)
            _ = try Auth0SDK.decode(AndroidPasskeyChallenge.self, challenge.body)
            var device = credential
            let assertion = authenticator.assert(
                &device, .init(challenge: try XCTUnwrap(Auth0SDK.base64URL(login.authn_params_public_key.challenge)).map { $0 }, origin: SeedWalk.origin))
            let signedIn = try await Auth0SDKConformanceTests.webauthnGrant(client, session: login.auth_session, response: String(decoding: assertion.json, as: UTF8.self))
            XCTAssertEqual(signedIn.status, .ok, "002 Login: token: \(signedIn.body)")
            _ = try Auth0SDK.decode(SwiftCredentials.self, signedIn.body)
            _ = try Auth0SDK.decode(AndroidCredentials.self, signedIn.body)
        }
    }
}
