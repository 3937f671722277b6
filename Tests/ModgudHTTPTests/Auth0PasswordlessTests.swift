import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 24: Auth0's passwordless email API, `/oauth/token`, `/oauth/revoke` and `/userinfo`,
/// with the bodies Auth0's SDKs send (JSON, `client_id` in the body, telemetry headers). The
/// same sign-in as Modgud's own endpoints: codes arrive over real SMTP.
final class Auth0PasswordlessTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// What auth0-python sends besides the body (`auth0/authentication/rest.py`).
    static let sdkHeaders: HTTPFields = [
        .contentType: "application/json", .userAgent: "Python/3.12.0",
        .init("Auth0-Client")!: Data(#"{"name":"auth0-python","version":"6.8.0","env":{"python":"3.12.0"}}"#.utf8).base64EncodedString(),
    ]

    func testStartRedeemRefreshUserinfoAndRevokeAsAnAuth0SDKSendsThem() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let start = try await H.call(
                client, .post, "/passwordless/start",
                #"{"client_id":"app","connection":"email","email":"Ada@Example.com","send":"code","authParams":{"scope":"openid"}}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(start.status, .ok, start.body)
            XCTAssertEqual(start.json["email"] as? String, "Ada@Example.com")
            XCTAssertEqual(start.json["email_verified"] as? Bool, false)
            XCTAssertEqual((start.json["_id"] as? String)?.count, 24)
            let code = try await harness.code(for: "ada@example.com")

            // auth0-python's GetToken.passwordless_login: JSON, empty audience and scope members included.
            let login = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"app","username":"ada@example.com","otp":"\#(code)","realm":"email","scope":"openid email offline_access","audience":"","grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp"}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(login.status, .ok, login.body)
            let access = try XCTUnwrap(login.json["access_token"] as? String)
            let refresh = try XCTUnwrap(login.json["refresh_token"] as? String)
            XCTAssertNotNil(login.json["id_token"])

            // The code is single-use on this path too.
            let replay = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"app","username":"ada@example.com","otp":"\#(code)","realm":"email","grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp"}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(replay.status, .badRequest)
            XCTAssertEqual(replay.json["error"] as? String, "invalid_grant")

            let userinfo = try await client.execute(uri: "/userinfo", method: .get, headers: [.authorization: "Bearer \(access)"])
            XCTAssertEqual(userinfo.status, .ok)
            let claims = try JSONSerialization.jsonObject(with: Data(buffer: userinfo.body)) as? [String: Any]
            XCTAssertEqual(claims?["email"] as? String, "ada@example.com")

            // GetToken.refresh_token: JSON with an empty scope.
            let refreshed = try await H.call(
                client, .post, "/oauth/token", #"{"client_id":"app","refresh_token":"\#(refresh)","scope":"","grant_type":"refresh_token"}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(refreshed.status, .ok, refreshed.body)
            let rotated = try XCTUnwrap(refreshed.json["refresh_token"] as? String)

            // RevokeToken.revoke_refresh_token: JSON; the whole sign-in ends.
            let revoked = try await H.call(client, .post, "/oauth/revoke", #"{"client_id":"app","token":"\#(rotated)"}"#, headers: Self.sdkHeaders)
            XCTAssertEqual(revoked.status, .ok, revoked.body)
            let after = try await H.call(
                client, .post, "/oauth/token", #"{"client_id":"app","refresh_token":"\#(rotated)","grant_type":"refresh_token"}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(after.json["error"] as? String, "invalid_grant")
            let gone = try await client.execute(uri: "/userinfo", method: .get, headers: [.authorization: "Bearer \(access)"])
            XCTAssertEqual(gone.status, .unauthorized)
        }
    }

    func testAMagicLinkStartSendsTheLinkAndAnUnknownAddressGetsTheSameAnswer() async throws {
        harness = try await EmailSignInHarness { $0.registrationPosture = .off }
        let harness = harness!
        _ = try await harness.registerUser("known@example.com")
        try await harness.app.test(.router) { client in
            let known = try await H.call(
                client, .post, "/passwordless/start", #"{"client_id":"app","connection":"email","email":"known@example.com"}"#, headers: Self.sdkHeaders)
            let unknown = try await H.call(
                client, .post, "/passwordless/start", #"{"client_id":"app","connection":"email","email":"nobody@example.com"}"#, headers: Self.sdkHeaders)
            XCTAssertEqual(known.status, .ok, known.body)
            XCTAssertEqual(unknown.status, .ok, unknown.body)
            XCTAssertEqual(Set(known.json.keys), Set(unknown.json.keys))
            XCTAssertEqual(known.json["email_verified"] as? Bool, unknown.json["email_verified"] as? Bool)
            // Auth0's default `send` is a link; the known address gets one, the unknown nothing.
            _ = try await harness.magicLink(for: "known@example.com")
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "nobody@example.com").count, 0)
            // Auth0's native variants (Auth0.swift's `link_ios`, Auth0.Android's `link_android`)
            // send the same link (issue 41).
            for (send, address) in [("link_ios", "ios@example.com"), ("link_android", "android@example.com")] {
                let userID = try await harness.registerUser(address)
                let started = try await H.call(
                    client, .post, "/passwordless/start", #"{"client_id":"app","connection":"email","email":"\#(address)","send":"\#(send)"}"#,
                    headers: Self.sdkHeaders)
                XCTAssertEqual(started.status, .ok, started.body)
                let link = try await harness.magicLink(for: address)
                XCTAssertEqual(link.userID, userID.uuidString.lowercased(), send)
            }
        }
    }

    func testAuth0sErrorsForBadConnectionsSendValuesClientsAndAddresses() async throws {
        harness = try await EmailSignInHarness()
        try await harness.app.test(.router) { client in
            func start(_ body: String) async throws -> H.Reply {
                try await H.call(client, .post, "/passwordless/start", body, headers: Self.sdkHeaders)
            }
            let sms = try await start(#"{"client_id":"app","connection":"sms","phone_number":"+15555550100"}"#)
            XCTAssertEqual(sms.status, .badRequest)
            XCTAssertEqual(sms.json["error"] as? String, "bad.connection")
            let send = try await start(#"{"client_id":"app","connection":"email","email":"a@example.com","send":"carrier-pigeon"}"#)
            XCTAssertEqual(send.json["error"] as? String, "bad.send")
            let email = try await start(#"{"client_id":"app","connection":"email","email":"not an address","send":"code"}"#)
            XCTAssertEqual(email.status, .badRequest)
            XCTAssertEqual(email.json["error"] as? String, "bad.email")
            let noClient = try await start(#"{"connection":"email","email":"a@example.com"}"#)
            XCTAssertEqual(noClient.json["error"] as? String, "bad.client_id")
            let unknownClient = try await start(#"{"client_id":"nope","connection":"email","email":"a@example.com"}"#)
            // No secret was presented: 400 (a 401 challenge only answers a failed authentication).
            XCTAssertEqual(unknownClient.status, .badRequest)
            XCTAssertEqual(unknownClient.json["error"] as? String, "invalid_client", unknownClient.body)
            // `plain` may use passkeys only.
            let notAllowed = try await start(#"{"client_id":"plain","connection":"email","email":"a@example.com","send":"code"}"#)
            XCTAssertEqual(notAllowed.status, .forbidden)
            XCTAssertEqual(notAllowed.json["error"] as? String, "unauthorized_client")
            let malformed = try await start(#"{"client_id":"app","#)
            XCTAssertEqual(malformed.status, .badRequest)
            XCTAssertEqual(malformed.json["error"] as? String, "invalid_request")
        }
    }

    func testRealmAcceptsItsConnectionNamesAndRefusesOthers() async throws {
        harness = try await EmailSignInHarness { $0.connections = ["acme-db"] }
        let harness = harness!
        try await harness.app.test(.router) { client in
            for (number, connection) in ["dev", "email", "Username-Password-Authentication", "acme-db"].enumerated() {
                _ = try await H.call(
                    client, .post, "/passwordless/start", #"{"client_id":"app","connection":"email","email":"c@example.com","send":"code"}"#,
                    headers: Self.sdkHeaders)
                let code = try await harness.code(for: "c@example.com", number: number + 1)
                let login = try await H.call(
                    client, .post, "/oauth/token",
                    #"{"client_id":"app","username":"c@example.com","otp":"\#(code)","realm":"\#(connection)","grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp"}"#,
                    headers: Self.sdkHeaders)
                XCTAssertEqual(login.status, .ok, "\(connection): \(login.body)")
                harness.clock.advance(EmailSignInService.resendCooldown + 1)
            }
            let other = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"app","username":"c@example.com","otp":"000000","realm":"google-oauth2","grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp"}"#,
                headers: Self.sdkHeaders)
            XCTAssertEqual(other.status, .badRequest)
            XCTAssertEqual(other.json["error"] as? String, "invalid_request")
            XCTAssertTrue((other.json["error_description"] as? String ?? "").contains("google-oauth2"))
        }
    }
}

extension Auth0PasswordlessTests {
    /// The realm's `issuerTrailingSlash`: Auth0's issuer form in discovery and in the ID token,
    /// and endpoint URLs without a doubled slash (DPoP's `htu` among them).
    func testTheIssuerTakesAuth0sTrailingSlashWhenTheRealmAsks() async throws {
        harness = try await EmailSignInHarness { $0.issuerTrailingSlash = true }
        let harness = harness!
        try await harness.app.test(.router) { client in
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertEqual(discovery.json["issuer"] as? String, "https://localhost/")
            XCTAssertEqual(discovery.json["token_endpoint"] as? String, "https://localhost/connect/token")
            XCTAssertEqual(discovery.json["jwks_uri"] as? String, "https://localhost/.well-known/jwks.json")
            _ = try await H.call(
                client, .post, "/passwordless/start", #"{"client_id":"app","connection":"email","email":"ida@example.com","send":"code"}"#,
                headers: Self.sdkHeaders)
            let code = try await harness.code(for: "ida@example.com")
            // With a DPoP proof (issue 29): Auth0's grant is bound like Modgud's, and htu is the
            // endpoint without a doubled slash.
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            let proof = try DPoPProofMaker.make([["key": 1]], htu: "https://localhost/oauth/token", iat: iat)[0]
            var headers = Self.sdkHeaders
            headers[HTTPField.Name("DPoP")!] = proof.proof
            let login = try await H.call(
                client, .post, "/oauth/token",
                #"{"client_id":"app","username":"ida@example.com","otp":"\#(code)","realm":"email","scope":"openid","grant_type":"http://auth0.com/oauth/grant-type/passwordless/otp"}"#,
                headers: headers)
            XCTAssertEqual(login.json["token_type"] as? String, "DPoP", login.body)
            let access = try XCTUnwrap(login.json["access_token"] as? String)
            let use = try DPoPProofMaker.make(
                [["key_pem": proof.key, "htm": "GET", "access_token": access]], htu: "https://localhost/userinfo", iat: iat)[0]
            let userinfo = try await H.call(
                client, .get, "/userinfo", "", headers: [.authorization: "DPoP \(access)", HTTPField.Name("DPoP")!: use.proof])
            XCTAssertEqual(userinfo.status, .ok, "\(userinfo.headers)")
            let idToken = try XCTUnwrap(login.json["id_token"] as? String, login.body)
            let payload = try XCTUnwrap(idToken.split(separator: ".").dropFirst().first.flatMap { Base64URLText.decode(String($0)) })
            let claims = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
            XCTAssertEqual(claims?["iss"] as? String, "https://localhost/")
        }
    }
}
