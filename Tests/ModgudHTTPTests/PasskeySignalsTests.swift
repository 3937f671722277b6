import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 46, item 2: what an app needs to keep the device's passkey list true, over a real
/// socket. An assertion by an unknown credential (never enrolled, or deleted) is refused with
/// its credential id and RP-ID, on both passkey grants; `GET /connect/passkey/signals` gives
/// the accepted credential ids and the names per RP-ID.
final class PasskeySignalsTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    let authenticator = SoftwareAuthenticator()

    override func tearDown() async throws {
        await harness?.close()
    }

    func makeHarness() async throws -> PasskeySteps {
        harness = try await PasskeyUpgradeTests.iosHarness()
        return PasskeySteps(harness: harness)
    }

    func testAnUnknownCredentialIsRefusedWithItsIDAndRPIDAlikeForDeletedAndNeverEnrolled() async throws {
        let steps = try await makeHarness()
        let harness = harness!
        let authenticator = self.authenticator
        try await harness.app.test(.live) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let (deleted, passkeyID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let removed = try await H.call(client, .delete, "/connect/passkey/\(passkeyID)", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(removed.status, .noContent)
            var stranger = SoftwareCredential(algorithm: .es256, rpID: "ios.acme.test", userHandle: Array(repeating: 7, count: 16))

            var answers: [String] = []
            for credential in [deleted, stranger] {
                var device = credential
                let ceremony = try await steps.begin(client, clientID: "ios")
                let assertion = authenticator.assert(&device, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
                let refused = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
                XCTAssertEqual(refused.status, .badRequest)
                XCTAssertEqual(refused.json["error"] as? String, "invalid_grant")
                XCTAssertEqual(refused.json["credential_id"] as? String, Base64URL.encode(credential.id), refused.body)
                XCTAssertEqual(refused.json["rp_id"] as? String, "ios.acme.test")
                answers.append(refused.json["error_description"] as? String ?? "")
            }
            XCTAssertEqual(answers[0], answers[1], "deleted and never enrolled answer alike")

            // Auth0's passkey grant carries the same.
            let challenge = try await H.call(client, .post, "/passkey/challenge", #"{"client_id":"ios","realm":"dev"}"#, headers: Auth0CompatibilityTests.json)
            let request = try XCTUnwrap(challenge.json["authn_params_public_key"] as? [String: Any])
            let assertion = authenticator.assert(
                &stranger, .init(challenge: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(request["challenge"] as? String))), origin: "https://ios.acme.test"))
            let signed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(assertion.json)) as? [String: Any])
            let body: [String: Any] = [
                "grant_type": "urn:okta:params:oauth:grant-type:webauthn", "client_id": "ios", "realm": "dev",
                "auth_session": try XCTUnwrap(challenge.json["auth_session"] as? String), "authn_response": signed,
            ]
            let auth0 = try await H.call(
                client, .post, "/connect/token", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self),
                headers: Auth0CompatibilityTests.json)
            XCTAssertEqual(auth0.json["credential_id"] as? String, Base64URL.encode(stranger.id), auth0.body)
            XCTAssertEqual(auth0.json["rp_id"] as? String, "ios.acme.test")
        }
    }

    func testTheSignalsListTheAcceptedCredentialsAndTheNamesPerRPID() async throws {
        let steps = try await makeHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let before = try await H.call(client, .get, "/connect/passkey/signals", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(before.status, .ok, before.body)
            let none = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(before.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(none.count, 1, "the client's own RP-ID, even with nothing accepted")
            XCTAssertEqual(none.first?["rpId"] as? String, "ios.acme.test")
            XCTAssertEqual(none.first?["allAcceptedCredentialIds"] as? [String], [])

            let (kept, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test", name: "Phone")
            let (_, removedID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test", name: "Old phone")
            _ = try await H.call(client, .delete, "/connect/passkey/\(removedID)", "", headers: PasskeySteps.bearer(token))
            let after = try await H.call(client, .get, "/connect/passkey/signals", "", headers: PasskeySteps.bearer(token))
            let signals = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(after.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(signals.count, 1, after.body)
            let ios = try XCTUnwrap(signals.first)
            XCTAssertEqual(ios["allAcceptedCredentialIds"] as? [String], [Base64URL.encode(kept.id)], "the deleted one is not accepted")
            XCTAssertEqual(ios["userId"] as? String, Base64URL.encode(kept.userHandle), "the user handle the device holds")
            XCTAssertEqual(ios["name"] as? String, "ada@example.com")
            XCTAssertEqual(ios["displayName"] as? String, "ada@example.com", "no names: the address")

            let anonymous = try await H.call(client, .get, "/connect/passkey/signals", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
        }
    }
}
