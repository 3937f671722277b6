import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 31: operators' passkeys through the console's JSON ceremonies.
extension ConsoleTests {
    /// An operator adds a passkey through the console's JSON ceremonies (a software
    /// authenticator plays the browser's dialog) and signs in with it; the ceremonies refuse
    /// other origins, forms, and a signed-in call without the CSRF header.
    func testAnOperatorAddsAPasskeyAndSignsInWithIt() async throws {
        let app = try await start()
        let harness = harness!
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            var json = session.headers
            json[.contentType] = "application/json"
            // Refusals first: no CSRF header, another origin, a form.
            let noToken = try await H.call(client, .post, "/console/me/passkeys/begin", "{}", headers: json)
            XCTAssertEqual(noToken.status, .forbidden)
            json[HTTPField.Name("X-CSRF-Token")!] = session.csrf
            var elsewhere = json
            elsewhere[.origin] = "https://evil.example"
            let crossOrigin = try await H.call(client, .post, "/console/me/passkeys/begin", "{}", headers: elsewhere)
            XCTAssertEqual(crossOrigin.status, .forbidden)
            let form = try await H.call(client, .post, "/console/sign-in/passkey/begin", "", headers: Self.form)
            XCTAssertEqual(form.status, .unsupportedMediaType)

            // Enrollment.
            let begun = try await H.call(client, .post, "/console/me/passkeys/begin", "{}", headers: json)
            XCTAssertEqual(begun.status, .ok, begun.body)
            let creation = try XCTUnwrap(begun.json["publicKey"] as? [String: Any])
            XCTAssertEqual((creation["rp"] as? [String: Any])?["id"] as? String, "localhost")
            let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(creation["challenge"] as? String)))
            let handle = try XCTUnwrap(Base64URL.decode(try XCTUnwrap((creation["user"] as? [String: Any])?["id"] as? String)))
            var credential = SoftwareCredential(rpID: "localhost", userHandle: handle)
            let registration = SoftwareAuthenticator().register(credential, .init(challenge: challenge, origin: "http://localhost:8080"))
            let enrolled = try await H.call(
                client, .post, "/console/me/passkeys/finish",
                try Self.body(["ceremonyId": try XCTUnwrap(begun.json["ceremonyId"] as? String), "name": "Laptop"], credential: registration), headers: json)
            XCTAssertEqual(enrolled.status, .ok, enrolled.body)
            let me = try await H.call(client, .get, "/console/me", "", headers: session.headers)
            XCTAssertTrue(me.body.contains("Laptop"))

            // Sign-in with it, no session needed.
            var anonymous: HTTPFields = [.contentType: "application/json"]
            anonymous[HTTPField.Name("Sec-Fetch-Site")!] = "same-origin"
            let login = try await H.call(client, .post, "/console/sign-in/passkey/begin", "{}", headers: anonymous)
            XCTAssertEqual(login.status, .ok, login.body)
            let request = try XCTUnwrap(login.json["publicKey"] as? [String: Any])
            let loginChallenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(request["challenge"] as? String)))
            let assertion = SoftwareAuthenticator().assert(&credential, .init(challenge: loginChallenge, origin: "http://localhost:8080"))
            let signedIn = try await H.call(
                client, .post, "/console/sign-in/passkey/finish",
                try Self.body(["ceremonyId": try XCTUnwrap(login.json["ceremonyId"] as? String)], credential: assertion), headers: anonymous)
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            XCTAssertEqual(signedIn.json["location"] as? String, "/console")
            let cookie = try XCTUnwrap(signedIn.headers[.setCookie]?.firstMatch(of: /modgud_console=([A-Za-z0-9_-]+);/)).1
            let page = try await H.call(client, .get, "/console/realms", "", headers: [.cookie: "modgud_console=\(cookie)"])
            XCTAssertEqual(page.status, .ok)
            // The ceremony was single use.
            let again = try await H.call(
                client, .post, "/console/sign-in/passkey/finish",
                try Self.body(["ceremonyId": try XCTUnwrap(login.json["ceremonyId"] as? String)], credential: assertion), headers: anonymous)
            XCTAssertEqual(again.status, .badRequest)
            XCTAssertNil(again.headers[.setCookie])
        }
    }

    private static func body(_ fields: [String: String], credential: some Encodable) throws -> String {
        var object: [String: Any] = fields
        object["credential"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(credential))
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// An operator with two-factor on is asked for the authenticator code beside the email code.
    func testAnOperatorWithTwoFactorGivesTheAuthenticatorCode() async throws {
        let app = try await start()
        let harness = harness!
        let admin = harness.core.administration
        let found = try await admin.users.find(realm: "operators", Self.operatorEmail)
        let operatorID = try XCTUnwrap(found)
        let provisioning = try await admin.users.enableTOTP(realm: "operators", userID: operatorID, metadata: .init(actor: "test"))
        let totp = TOTP(secret: try XCTUnwrap(Base32Test.decode(provisioning.secret)))
        try await app.test(.router) { client in
            let without = try await Self.signIn(client, harness, Self.operatorEmail)
            XCTAssertEqual(without.status, .badRequest)
            XCTAssertNil(without.headers[.setCookie])
            XCTAssertTrue(without.body.contains("Authenticator code"), "the form asks again, with the field")
            // A new code: the refused attempt did not spend the first, but take a fresh one.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            _ = try await H.call(client, .post, "/console/sign-in", "email=\(Self.operatorEmail)", headers: Self.form)
            let code = try await harness.code(for: Self.operatorEmail, number: 2)
            let second = totp.code(counter: totp.counter(at: harness.clock.now()))
            let with = try await H.call(
                client, .post, "/console/sign-in/code", "email=\(Self.operatorEmail)&code=\(code)&totp=\(second)", headers: Self.form)
            XCTAssertEqual(with.status, .seeOther, with.body)
            XCTAssertNotNil(with.headers[.setCookie])
        }
    }
}
