import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 14, item 4: an app built on Auth0's Native Passkeys API works by changing its domain.
/// The requests are the seed's (`002_138d1752ff378ab3.txt`) as printed, with the placeholders
/// filled in. The seed's samples have two typos no JSON parser accepts (a comma after the last
/// member of `user_profile`, and none after `audience`): those two characters are corrected,
/// nothing else.
final class Auth0CompatibilityTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let json: HTTPFields = [.contentType: "application/json"]

    func testTheSeedsSignUpAndLoginRequestsSucceedUnchanged() async throws {
        let harness = try await PasskeySignUpTests.makeHarness()
        self.harness = harness
        let authenticator = SoftwareAuthenticator()
        try await harness.app.test(.router) { client in
            // Signup flow: request signup challenge.
            let register = try await H.call(
                client, .post, "/passkey/register",
                """
                {
                "client_id": "ios",
                "realm": "dev",
                "user_profile": {
                "email": "grace@example.com",
                "name": "Grace Hopper"
                }
                }
                """, headers: Self.json)
            XCTAssertEqual(register.status, .ok, register.body)
            let creation = try XCTUnwrap(register.json["authn_params_public_key"] as? [String: Any])
            for member in ["challenge", "timeout", "rp", "pubKeyCredParams", "authenticatorSelection", "user"] {
                XCTAssertNotNil(creation[member], "authn_params_public_key.\(member)")
            }
            XCTAssertEqual((creation["user"] as? [String: Any])?["name"] as? String, "grace@example.com")
            XCTAssertEqual((creation["user"] as? [String: Any])?["displayName"] as? String, "Grace Hopper")
            XCTAssertEqual((creation["authenticatorSelection"] as? [String: Any])?["residentKey"] as? String, "required")
            let algorithms = (creation["pubKeyCredParams"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int }
            XCTAssertEqual(algorithms, [-8, -7, -257], "the seed's order")
            XCTAssertEqual(creation["timeout"] as? Int, 300_000, "milliseconds")
            let session = try XCTUnwrap(register.json["auth_session"] as? String)

            // Authenticate new user: the token endpoint, JSON, attestation in authn_response.
            let (credential, attestation) = try SignUpSteps.create(options: creation, authenticator: authenticator, origin: "https://ios.acme.test")
            let created = try JSONSerialization.jsonObject(with: Data(attestation.utf8)) as! [String: Any]
            let response = created["response"] as! [String: Any]
            let signUp = try await H.call(
                client, .post, "/connect/token",
                """
                {
                "grant_type": "urn:okta:params:oauth:grant-type:webauthn",
                "client_id": "ios",
                "realm": "dev",
                "scope": "openid profile email offline_access",
                "audience": "https://api.acme.test",
                "auth_session": "\(session)",
                "authn_response": {
                "id": "\(created["id"] as! String)",
                "rawId": "\(created["rawId"] as! String)",
                "type": "public-key",
                "authenticatorAttachment": "platform",
                "response": {
                "clientDataJSON": "\(response["clientDataJSON"] as! String)",
                "attestationObject": "\(response["attestationObject"] as! String)"
                }
                }
                }
                """, headers: Self.json)
            XCTAssertEqual(signUp.status, .ok, signUp.body)
            for member in ["access_token", "refresh_token", "id_token", "token_type", "expires_in"] {
                XCTAssertNotNil(signUp.json[member], member)
            }
            XCTAssertEqual(signUp.json["token_type"] as? String, "Bearer")
            let claims = try PasskeySignUpTests.idTokenClaims(signUp)
            XCTAssertEqual(claims["email"] as? String, "grace@example.com")
            let introspected = try await H.call(
                client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(signUp.json["access_token"] as! String))
            XCTAssertEqual(introspected.status, .ok, "the audience became the token's resource and the token works")

            // Login flow: request login challenge.
            let challenge = try await H.call(
                client, .post, "/passkey/challenge",
                """
                {
                "client_id": "ios",
                "realm": "dev"
                }
                """, headers: Self.json)
            XCTAssertEqual(challenge.status, .ok, challenge.body)
            let request = try XCTUnwrap(challenge.json["authn_params_public_key"] as? [String: Any])
            XCTAssertEqual(request["rpId"] as? String, "ios.acme.test")
            XCTAssertNotNil(request["userVerification"])
            XCTAssertEqual(request["timeout"] as? Int, 300_000)
            let loginSession = try XCTUnwrap(challenge.json["auth_session"] as? String)
            var device = credential
            let assertion = authenticator.assert(
                &device, .init(challenge: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(request["challenge"] as? String))), origin: "https://ios.acme.test"))
            let signed = try JSONSerialization.jsonObject(with: Data(assertion.json)) as! [String: Any]
            let proof = signed["response"] as! [String: Any]
            let login = try await H.call(
                client, .post, "/connect/token",
                """
                {
                "grant_type": "urn:okta:params:oauth:grant-type:webauthn",
                "client_id": "ios",
                "realm": "dev",
                "scope": "openid profile email offline_access",
                "audience": "https://api.acme.test",
                "auth_session": "\(loginSession)",
                "authn_response": {
                "id": "\(signed["id"] as! String)",
                "rawId": "\(signed["rawId"] as! String)",
                "type": "public-key",
                "authenticatorAttachment": "platform",
                "response": {
                "authenticatorData": "\(proof["authenticatorData"] as! String)",
                "clientDataJSON": "\(proof["clientDataJSON"] as! String)",
                "signature": "\(proof["signature"] as! String)",
                "userHandle": "\(proof["userHandle"] as! String)"
                },
                "clientExtensionResults": {}
                }
                }
                """, headers: Self.json)
            XCTAssertEqual(login.status, .ok, login.body)
            XCTAssertEqual(try PasskeySignUpTests.idTokenClaims(login)["sub"] as? String, claims["sub"] as? String)
        }
    }

    func testAuth0ShapedErrors() async throws {
        let harness = try await PasskeySignUpTests.makeHarness()
        self.harness = harness
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.router) { client in
            for (body, error, status) in [
                (#"{"client_id":"ios","realm":"google-oauth2","user_profile":{"email":"a@example.com"}}"#, "invalid_request",
                 HTTPResponse.Status.badRequest),
                (#"{"client_id":"ios","user_profile":{"phone_number":"+15550100"}}"#, "invalid_request", .badRequest),
                (#"{"client_id":"ios","user_profile":{"name":"No Email"}}"#, "invalid_request", .badRequest),
                (#"{"client_id":"ios","user_profile":{"email":"a@example.com"},"#, "invalid_request", .badRequest),
                (#"{"client_id":"plain","user_profile":{"email":"a@example.com"}}"#, "unauthorized_client", .forbidden),
                // Issue 44: a member given twice is refused, whichever one a parser would read.
                (#"{"client_id":"plain","client_id":"ios","user_profile":{"email":"a@example.com"}}"#, "invalid_request", .badRequest),
            ] {
                let reply = try await H.call(client, .post, "/passkey/register", body, headers: Self.json)
                XCTAssertEqual(reply.status, status, body)
                XCTAssertEqual(reply.json["error"] as? String, error, reply.body)
                XCTAssertNotNil(reply.json["error_description"], reply.body)
            }
            // Members Auth0 does not define are ignored, as Auth0 ignores them (issue 24).
            let extra = try await H.call(
                client, .post, "/passkey/register", #"{"client_id":"ios","user_profile":{"email":"a@example.com"},"organization":"org_1","extra":1}"#,
                headers: Self.json)
            XCTAssertEqual(extra.status, .ok, extra.body)
            let challengeExtra = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"ios","scope":"openid"}"#, headers: Self.json)
            XCTAssertEqual(challengeExtra.status, .ok, challengeExtra.body)
            let form = try await H.call(client, .post, "/passkey/challenge", "client_id=ios", headers: H.form)
            XCTAssertEqual(form.json["error"] as? String, "invalid_request")
            // A JSON token request naming a parameter twice, as a form may not (RFC 6749 section 3.2).
            let twice = try await H.call(
                client, .post, "/oauth/token", #"{"grant_type":"refresh_token","client_id":"ios","client_id":"plain","refresh_token":"x"}"#,
                headers: Self.json)
            XCTAssertEqual(twice.status, .badRequest, twice.body)
            XCTAssertEqual(twice.json["error"] as? String, "invalid_request")
            XCTAssertTrue((twice.json["error_description"] as? String)?.contains("client_id") == true, twice.body)

            // An address with an account: Auth0 tells the app to log in; so does Modgud, after
            // the whole ceremony.
            let register = try await H.call(
                client, .post, "/passkey/register", #"{"client_id":"ios","user_profile":{"email":"bob@example.com"}}"#, headers: Self.json)
            XCTAssertEqual(register.status, .ok, "the challenge does not tell")
            let creation = try XCTUnwrap(register.json["authn_params_public_key"] as? [String: Any])
            let (_, attestation) = try SignUpSteps.create(options: creation, authenticator: SoftwareAuthenticator(), origin: "https://ios.acme.test")
            let exists = try await H.call(
                client, .post, "/connect/token",
                """
                {"grant_type":"urn:okta:params:oauth:grant-type:webauthn","client_id":"ios",\
                "auth_session":"\(register.json["auth_session"] as! String)","authn_response":\(attestation)}
                """, headers: Self.json)
            XCTAssertEqual(exists.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(exists.json["error_description"] as? String, PasskeyService.accountExists.description)
            let badRealm = try await H.call(
                client, .post, "/connect/token",
                #"{"grant_type":"urn:okta:params:oauth:grant-type:webauthn","client_id":"ios","realm":"other","auth_session":"x","authn_response":{}}"#,
                headers: Self.json)
            XCTAssertEqual(badRealm.json["error"] as? String, "invalid_request")
            let notJSON = try await H.call(client, .post, "/connect/token", #"{"grant_type":"#, headers: Self.json)
            XCTAssertEqual(notJSON.status, .badRequest)
            XCTAssertEqual(notJSON.json["error"] as? String, "invalid_request")
            let notAllowed = try await H.call(
                client, .post, "/connect/token",
                #"{"grant_type":"urn:okta:params:oauth:grant-type:webauthn","client_id":"app","auth_session":"x","authn_response":{}}"#,
                headers: Self.json)
            XCTAssertEqual(notAllowed.json["error"] as? String, "unauthorized_client", "the passkey grant is what the client needs")
        }
    }
}
