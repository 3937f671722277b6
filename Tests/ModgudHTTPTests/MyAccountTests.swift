import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 24: Auth0's My Account API for passkeys. The enrollment requests are seed 002's
/// (`002_138d1752ff378ab3.txt`) as printed, placeholders filled in (its `clientDataJson`
/// spelling included); the token comes from Auth0's passwordless grant with the My Account
/// audience and scopes, as an Auth0 app gets it.
final class MyAccountTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let audience = "https://localhost/me/"
    static let allScopes = ["create", "read", "update", "delete"].map { "\($0):me:authentication_methods" }

    static func makeHarness() async throws -> EmailSignInHarness {
        let harness = try await PasskeySignUpTests.makeHarness()
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "auth0app",
            settings: ClientSettings(
                type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: Set(["openid", "email", "offline_access"] + Self.allScopes),
                audiences: [Self.audience], rpID: "ios.acme.test"),
            metadata: .init())
        return harness
    }

    /// An Auth0 passwordless sign-in asking for the My Account audience and `scopes`.
    static func signIn(
        _ harness: EmailSignInHarness, _ client: some TestClientProtocol, _ email: String, scopes: [String], audience: String? = audience, number: Int = 1,
        clientID: String = "auth0app"
    ) async throws -> String {
        _ = try await H.call(
            client, .post, "/passwordless/start", #"{"client_id":"\#(clientID)","connection":"email","email":"\#(email)","send":"code"}"#,
            headers: Auth0PasswordlessTests.sdkHeaders)
        let code = try await harness.code(for: email, number: number)
        let login = try await H.call(
            client, .post, "/oauth/token",
            #"{"grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp","client_id":"\#(clientID)","username":"\#(email)","otp":"\#(code)","realm":"email","scope":"\#((["openid", "offline_access"] + scopes).joined(separator: " "))","audience":"\#(audience ?? "")"}"#,
            headers: Auth0PasswordlessTests.sdkHeaders)
        XCTAssertEqual(login.status, .ok, login.body)
        return try XCTUnwrap(login.json["access_token"] as? String)
    }

    func testTheSeedsEnrollmentThenListGetRenameAndDelete() async throws {
        harness = try await Self.makeHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let token = try await Self.signIn(harness, client, "ada@example.com", scopes: Self.allScopes)
            let bearer = PasskeySteps.bearer(token, json: true)

            // Initiate Passkey Enrollment (the seed's request).
            let begun = try await H.call(
                client, .post, "/me/v1/authentication-methods",
                """
                {
                "type": "passkey",
                "connection": "Username-Password-Authentication",
                "identity": "\(try await Self.userID(harness, token))"
                }
                """, headers: bearer)
            // Auth0 answers 202 with the method's URL in `Location` (its OpenAPI document).
            XCTAssertEqual(begun.status, .accepted, begun.body)
            XCTAssertEqual(begun.headers[.location], "https://localhost/me/v1/authentication-methods/passkey%7Cnew")
            let options = try XCTUnwrap(begun.json["authn_params_public_key"] as? [String: Any])
            for member in ["challenge", "timeout", "rp", "pubKeyCredParams", "authenticatorSelection", "user"] {
                XCTAssertNotNil(options[member], "authn_params_public_key.\(member)")
            }
            let session = try XCTUnwrap(begun.json["auth_session"] as? String)

            // The device creates the passkey; Verify Passkey Enrollment, as the seed prints it.
            let (_, attestation) = try SignUpSteps.create(options: options, authenticator: SoftwareAuthenticator(), origin: "https://ios.acme.test")
            let created = try JSONSerialization.jsonObject(with: Data(attestation.utf8)) as! [String: Any]
            let response = created["response"] as! [String: Any]
            let verified = try await H.call(
                client, .post, "/me/v1/authentication-methods/passkey|new/verify",
                """
                {
                "auth_session": "\(session)",
                "authn_response": {
                "id": "\(created["id"] as! String)",
                "rawId": "\(created["rawId"] as! String)",
                "type": "public-key",
                "authenticatorAttachment": "platform",
                "response": {
                "clientDataJson": "\(response["clientDataJSON"] as! String)",
                "attestationObject": "\(response["attestationObject"] as! String)"
                }
                }
                }
                """, headers: bearer)
            XCTAssertEqual(verified.status, .created, verified.body)
            let id = try XCTUnwrap(verified.json["id"] as? String)
            XCTAssertEqual(verified.headers[.location], "https://localhost/me/v1/authentication-methods/" + id.replacingOccurrences(of: "|", with: "%7C"))
            XCTAssertTrue(id.hasPrefix("passkey|"), id)
            XCTAssertEqual(verified.json["type"] as? String, "passkey")

            // The session is single-use.
            let again = try await H.call(
                client, .post, "/me/v1/authentication-methods/passkey%7Cnew/verify",
                #"{"auth_session":"\#(session)","authn_response":\#(attestation)}"#, headers: bearer)
            XCTAssertEqual(again.status, .badRequest, again.body)

            let listed = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(listed.status, .ok, listed.body)
            let methods = try XCTUnwrap(listed.json["authentication_methods"] as? [[String: Any]])
            XCTAssertEqual(methods.map { $0["id"] as? String }, [id])

            let encoded = id.replacingOccurrences(of: "|", with: "%7C")
            let one = try await H.call(client, .get, "/me/v1/authentication-methods/\(encoded)", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(one.json["id"] as? String, id, one.body)

            let renamed = try await H.call(client, .patch, "/me/v1/authentication-methods/\(encoded)", #"{"name":"Work phone"}"#, headers: bearer)
            XCTAssertEqual(renamed.status, .ok, renamed.body)
            XCTAssertEqual(renamed.json["name"] as? String, "Work phone")

            let deleted = try await H.call(client, .delete, "/me/v1/authentication-methods/\(encoded)", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(deleted.status, .noContent, deleted.body)
            let empty = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual((empty.json["authentication_methods"] as? [Any])?.count, 0, empty.body)
            let gone = try await H.call(client, .get, "/me/v1/authentication-methods/\(encoded)", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(gone.status, .notFound)
        }
    }

    /// Issue 65: by default My Account takes any user token of the realm that carries the
    /// route's scope; a token without it is 403 `insufficient_scope`, never a 401 that would
    /// send the app to refresh.
    func testByDefaultEachRoutesScopeIsRequiredAndNotTheAudience() async throws {
        harness = try await Self.makeHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let plain = try await Self.signIn(harness, client, "bo@example.com", scopes: [], audience: nil, clientID: "app")
            let unscoped = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(plain))
            XCTAssertEqual(unscoped.status, .forbidden, unscoped.body)
            XCTAssertEqual(unscoped.json["title"] as? String, "insufficient_scope", unscoped.body)
            let unasked = try await Self.signIn(harness, client, "cy@example.com", scopes: Self.allScopes, audience: nil)
            let listed = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(unasked))
            XCTAssertEqual(listed.status, .ok, listed.body)
        }
    }

    func testWithTheAudienceGuardTheAudienceAndEachRoutesScopeAreRequired() async throws {
        harness = try await Self.makeHarness()
        let harness = harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.accountAudience = true }
        try await harness.app.test(.router) { client in
            // A token of a client without the My Account audience: 401 invalid_token, as a
            // problem (Auth0's `ErrorResponse`) beside the challenge.
            let plain = try await Self.signIn(harness, client, "bo@example.com", scopes: [], audience: nil, clientID: "app")
            let noAudience = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(plain))
            XCTAssertEqual(noAudience.status, .unauthorized)
            XCTAssertTrue(noAudience.headers[.wwwAuthenticate]?.contains("invalid_token") == true)
            XCTAssertEqual(noAudience.headers[.contentType], "application/problem+json")
            XCTAssertEqual(noAudience.json["title"] as? String, "invalid_token")
            XCTAssertEqual(noAudience.json["status"] as? Int, 401)
            // Without `audience`, a token is for the client's default audience only: never My
            // Account's unless asked (issue 41).
            let unasked = try await Self.signIn(harness, client, "cy@example.com", scopes: Self.allScopes, audience: nil)
            let notMine = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(unasked))
            XCTAssertEqual(notMine.status, .unauthorized, notMine.body)
            // The audience, read only: reading works, every change is 403 insufficient_scope.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let reader = try await Self.signIn(harness, client, "bo@example.com", scopes: ["read:me:authentication_methods"], number: 2)
            let read = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: PasskeySteps.bearer(reader))
            XCTAssertEqual(read.status, .ok, read.body)
            for (method, path, body) in [
                (HTTPRequest.Method.post, "/me/v1/authentication-methods", #"{"type":"passkey"}"#),
                (.patch, "/me/v1/authentication-methods/passkey|\(UUID())", #"{"name":"x"}"#),
                (.delete, "/me/v1/authentication-methods/passkey|\(UUID())", ""),
            ] {
                let refused = try await H.call(client, method, path, body, headers: PasskeySteps.bearer(reader, json: true))
                XCTAssertEqual(refused.status, .forbidden, "\(method) \(path)")
                XCTAssertTrue(refused.headers[.wwwAuthenticate]?.contains("insufficient_scope") == true)
                XCTAssertEqual(refused.json["title"] as? String, "insufficient_scope", refused.body)
            }
            // No token at all.
            let anonymous = try await H.call(client, .get, "/me/v1/authentication-methods", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
        }
    }

    func testEnrollmentNeedsAFreshSignInWithTheStepUpGuardAndOnlyPasskeys() async throws {
        harness = try await Self.makeHarness()
        let harness = harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.passkeyStepUp = true }
        try await harness.app.test(.router) { client in
            let token = try await Self.signIn(harness, client, "cy@example.com", scopes: Self.allScopes)
            let other = try await H.call(
                client, .post, "/me/v1/authentication-methods", #"{"type":"totp"}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(other.status, .badRequest, other.body)
            let unknownConnection = try await H.call(
                client, .post, "/me/v1/authentication-methods", #"{"type":"passkey","connection":"google-oauth2"}"#,
                headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(unknownConnection.status, .badRequest, unknownConnection.body)
            let someoneElse = try await H.call(
                client, .post, "/me/v1/authentication-methods", #"{"type":"passkey","identity_user_id":"\#(UUID())"}"#,
                headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(someoneElse.status, .badRequest, someoneElse.body)
            // Past the realm's step-up freshness (10 minutes by default): sign in again.
            harness.clock.advance(11 * 60)
            let stale = try await H.call(
                client, .post, "/me/v1/authentication-methods", #"{"type":"passkey"}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(stale.status, .unauthorized, stale.body)
            XCTAssertTrue(stale.body.contains("Passkey.ReauthenticationRequired"), stale.body)
            XCTAssertTrue(
                stale.headers[values: .wwwAuthenticate].contains { $0.contains(#"error="insufficient_user_authentication""#) }, "RFC 9470 (issue 46)")
        }
    }

    static func userID(_ harness: EmailSignInHarness, _ token: String) async throws -> String {
        let found = try await harness.core.tokenIntrospection.liveAccessToken(realm: "dev", token: token)
        return try XCTUnwrap(found?.userID).uuidString.lowercased()
    }
}
