import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 46, item 1: automatic passkey upgrade (WebAuthn L3 conditional create) over a real
/// socket. A registration without user presence is accepted only in a ceremony begun with
/// `mediation=conditional`, right after a sign-in by another factor.
final class PasskeyUpgradeTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    let authenticator = SoftwareAuthenticator()

    override func tearDown() async throws {
        await harness?.close()
    }

    func makeHarness() async throws -> PasskeySteps {
        harness = try await Self.iosHarness()
        return PasskeySteps(harness: harness)
    }

    /// A realm with primary domain `acme.test` and the public client `ios` (code and passkey
    /// grants, RP-ID `ios.acme.test`).
    static func iosHarness(_ more: (inout RealmSettings) -> Void = { _ in }) async throws -> EmailSignInHarness {
        let harness = try await EmailSignInHarness(settings: {
            $0.primaryDomain = "acme.test"
            more(&$0)
        })
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(
                type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "email", "offline_access"], rpID: "ios.acme.test"),
            metadata: .init())
        return harness
    }

    /// enroll/begin (with `query`), then a registration with `flags`: the two replies.
    static func enroll(
        _ client: some TestClientProtocol, authenticator: SoftwareAuthenticator, token: String, query: String, flags: AuthenticatorFlags
    ) async throws
        -> (begun: H.Reply, enrolled: H.Reply?, credential: SoftwareCredential?)
    {
        let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin\(query)", "", headers: PasskeySteps.bearer(token))
        guard begun.status == .ok else { return (begun, nil, nil) }
        let options = try XCTUnwrap(begun.json["options"] as? [String: Any])
        let user = try XCTUnwrap(options["user"] as? [String: Any])
        let credential = SoftwareCredential(
            algorithm: .es256, rpID: "ios.acme.test", userHandle: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(user["id"] as? String))))
        var registration = SoftwareAuthenticator.RegistrationOptions(
            challenge: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String))), origin: "https://ios.acme.test")
        registration.flags = flags
        let attestation = authenticator.register(credential, registration)
        let body = #"{"ceremonyId":"\#(try XCTUnwrap(begun.json["ceremonyId"] as? String))","attestation":\#(String(decoding: attestation.json, as: UTF8.self))}"#
        let enrolled = try await H.call(client, .post, "/connect/passkey/enroll", body, headers: PasskeySteps.bearer(token, json: true))
        return (begun, enrolled, credential)
    }

    func testAnUpgradeAfterACodeAcceptsARegistrationWithoutUserPresence() async throws {
        let steps = try await makeHarness()
        let harness = harness!
        let authenticator = self.authenticator
        try await harness.app.test(.live) { client in
            // The code's token response says an upgrade is possible (no passkey under the RP-ID).
            _ = try await H.requestCode(client, "ada@example.com")
            let signedIn = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com"), clientID: "ios", scope: "openid offline_access")
            XCTAssertEqual(signedIn.json["passkey_upgrade"] as? Bool, true, signedIn.body)
            let token = try XCTUnwrap(signedIn.json["access_token"] as? String)
            let upgrade = try await Self.enroll(client, authenticator: authenticator, token: token, query: "?mediation=conditional", flags: [])
            XCTAssertEqual(upgrade.begun.json["mediation"] as? String, "conditional", upgrade.begun.body)
            XCTAssertEqual(upgrade.enrolled?.status, .ok, upgrade.enrolled?.body ?? "")
            let recorded = try await harness.core.pool.query(
                "SELECT payload->>'conditional' FROM events WHERE type = 'passkey_ceremony.begun' ORDER BY position DESC LIMIT 1")
            XCTAssertEqual(try recorded.first?.decode(String?.self, at: 0), "true", "the ceremony records the upgrade")

            // The upgraded passkey signs in as any other (with a gesture: UP and UV).
            var credential = try XCTUnwrap(upgrade.credential)
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
            let tokens = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
            XCTAssertEqual(tokens.status, .ok, tokens.body)

            // With a passkey under the RP-ID, a code sign-in no longer offers the upgrade; a
            // client without passkeys never does.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            _ = try await H.requestCode(client, "ada@example.com")
            let again = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2), clientID: "ios", scope: "openid offline_access")
            XCTAssertEqual(again.status, .ok, again.body)
            XCTAssertNil(again.json["passkey_upgrade"])
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            _ = try await H.requestCode(client, "grace@example.com")
            let plain = try await H.redeemCode(client, "grace@example.com", try await harness.code(for: "grace@example.com"), clientID: "app")
            XCTAssertEqual(plain.status, .ok, plain.body)
            XCTAssertNil(plain.json["passkey_upgrade"], "the app client has no passkey grant")
        }
    }

    /// UP=0 outside an upgrade ceremony is refused; an upgrade after a passkey sign-in, after
    /// the window, or with another mediation is refused before any ceremony begins.
    func testWithoutUserPresenceOnlyAnUpgradeRightAfterAnotherFactor() async throws {
        let steps = try await makeHarness()
        let harness = harness!
        let authenticator = self.authenticator
        try await harness.app.test(.live) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let ordinary = try await Self.enroll(client, authenticator: authenticator, token: token, query: "", flags: [])
            XCTAssertEqual(ordinary.enrolled?.json["title"] as? String, "Passkey.InvalidAttestation", ordinary.enrolled?.body ?? "")
            let presentOnly = try await Self.enroll(client, authenticator: authenticator, token: token, query: "?mediation=conditional", flags: [.userPresent])
            XCTAssertEqual(presentOnly.enrolled?.status, .ok, "an upgrade may assert presence anyway: \(presentOnly.enrolled?.body ?? "")")
            let other = try await Self.enroll(client, authenticator: authenticator, token: token, query: "?mediation=silent", flags: [])
            XCTAssertEqual(other.begun.json["title"] as? String, "Passkey.InvalidRequest", other.begun.body)

            // A sign-in by passkey is not another factor: no upgrade from it.
            var credential = try XCTUnwrap(presentOnly.credential)
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
            let byPasskey = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
            let passkeyToken = try XCTUnwrap(byPasskey.json["access_token"] as? String, byPasskey.body)
            let fromPasskey = try await Self.enroll(client, authenticator: authenticator, token: passkeyToken, query: "?mediation=conditional", flags: [])
            XCTAssertEqual(fromPasskey.begun.status, .forbidden)
            XCTAssertEqual(fromPasskey.begun.json["title"] as? String, "Passkey.UpgradeNotAllowed")

            // Past the window (5 minutes), even with a token still fresh enough to enroll by hand.
            harness.clock.advance(PasskeyService.upgradeWindow + 1)
            let late = try await Self.enroll(client, authenticator: authenticator, token: token, query: "?mediation=conditional", flags: [])
            XCTAssertEqual(late.begun.json["title"] as? String, "Passkey.UpgradeNotAllowed", late.begun.body)
            let begun = try await harness.core.pool.query(
                "SELECT count(*)::int8 FROM events WHERE type = 'passkey_ceremony.begun' AND payload->>'conditional' = 'true'")
            XCTAssertEqual(try begun.first?.decode(Int.self, at: 0), 1, "refused upgrades begin no ceremony")
        }
    }
}
