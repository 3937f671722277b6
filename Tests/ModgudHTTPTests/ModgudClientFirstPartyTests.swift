import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudClient
import ModgudDomain
@testable import ModgudService
import WebAuthnTesting
import Synchronization
import XCTest

/// Issue 45, item 6: `ModgudClient.FirstPartyFlow` speaks draft-ietf-oauth-first-party-apps to
/// a live server over a real socket (URLSession, mail over SMTP): the endpoint from discovery,
/// PKCE, the `auth_session` between steps, DPoP on every request, and the code redeemed.
final class ModgudClientFirstPartyTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func app(_ port: Int, _ harness: EmailSignInHarness, clientID: String = "app", key: (any DPoPSigner)? = nil) -> ModgudClient {
        let clock = harness.clock
        return ModgudClient(
            configuration: .init(issuer: URL(string: "http://localhost:\(port)")!, clientID: clientID, scope: "openid email profile offline_access"),
            store: MemoryTokenStore(), dpop: key, now: { clock.now() })
    }

    /// A sign-up that is asked for the realm's required name, a wrong code and the right one,
    /// DPoP-bound; then a person with TOTP on is asked for it.
    func testEmailCodeWithRequiredNameDPoPAndASecondFactor() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationFields = RegistrationFields(firstname: .required) }, issuerScheme: "http")
        let harness = self.harness!
        let totp = try await EmailSignInTests.turnOnTOTP(harness, user: try await harness.registerUser("ada@example.com"))
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = Self.app(port, harness, key: SoftwareDPoPKey())
            let flow = await app.firstPartyFlow()
            let asked = try await flow.start(email: "new@example.com")
            XCTAssertEqual(asked, .informationRequired(["given_name"]))
            let sent = try await flow.submit(fields: ["given_name": "Grace"])
            XCTAssertEqual(sent, .emailCodeSent)
            do {
                _ = try await flow.submit(emailCode: "000000")
                XCTFail("a wrong code")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidCode) }
            guard case .signedIn(let session) = try await flow.submit(emailCode: try await harness.code(for: "new@example.com")) else {
                return XCTFail("not signed in")
            }
            XCTAssertTrue(session.isDPoPBound, "token_type DPoP")
            XCTAssertNotNil(session.refreshToken)
            let claims = try await app.userInfo()
            XCTAssertEqual(claims["email"]?.string, "new@example.com")
            XCTAssertEqual(claims["given_name"]?.string, "Grace")
            XCTAssertNotNil(session.authSession, "section 6.1: kept for a step-up")

            // A step-up: a code to the person's own address, a fresh session of the same person.
            harness.clock.advance(EmailSignInService.resendCooldown + 1)
            let stepUp = await app.firstPartyFlow()
            let stepSent = try await stepUp.stepUp(maxAge: 0)
            XCTAssertEqual(stepSent, .emailCodeSent)
            guard case .signedIn(let fresh) = try await stepUp.submit(emailCode: try await harness.code(for: "new@example.com", number: 2)) else {
                return XCTFail("not signed in again")
            }
            XCTAssertEqual(fresh.subject, session.subject)
            XCTAssertNotEqual(fresh.authSession, session.authSession)

            let second = await app.firstPartyFlow()
            let step = try await second.start(email: "ada@example.com", fields: ["given_name": "Ada"])
            XCTAssertEqual(step, .emailCodeSent)
            let owed = try await second.submit(emailCode: try await harness.code(for: "ada@example.com"))
            XCTAssertEqual(owed, .secondFactorRequired)
            guard case .signedIn(let ada) = try await second.submit(totpCode: totp.current) else { return XCTFail("not signed in") }
            XCTAssertEqual(ada.idTokenClaims?["amr"], .array([.string("otp"), .string("mfa")]))
        }
    }

    /// A magic link, and a usernameless passkey: each signs in the account it belongs to.
    func testMagicLinkAndPasskey() async throws {
        harness = try await PasskeySignUpTests.makeHarness(issuerScheme: "http") { $0.magicLinkEnabled = true }
        let harness = self.harness!
        let userID = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = Self.app(port, harness)
            let flow = await app.firstPartyFlow()
            let sent = try await flow.start(email: "bob@example.com", delivery: .link)
            XCTAssertEqual(sent, .magicLinkSent)
            let link = try await harness.magicLink(for: "bob@example.com")
            guard case .signedIn(let bob) = try await flow.submit(magicLink: try XCTUnwrap(URL(string: link.link))) else {
                return XCTFail("not signed in")
            }
            XCTAssertEqual(bob.subject, userID.uuidString.lowercased())

            let ios = Self.app(port, harness, clientID: "ios")
            let device = SoftwarePasskeys(origin: "https://ios.acme.test")
            let signedUp = try await ios.signUpWithPasskey(email: "grace@example.com", firstName: "Grace", using: device)
            try await ios.signOut()
            let passkey = await ios.firstPartyFlow()
            let requested = try await passkey.startWithPasskey()
            XCTAssertEqual(requested, .passkeyRequested)
            guard case .signedIn(let grace) = try await passkey.submit(passkeyUsing: device) else { return XCTFail("not signed in") }
            XCTAssertEqual(grace.subject, signedUp.subject)
            do {
                _ = try await passkey.submit(emailCode: "123456")
                XCTFail("a finished flow has no session")
            } catch let error as ModgudError {
                guard case .invalidResponse = error else { return XCTFail("\(error)") }
            }
        }
    }
}

/// Issue 46 through the library: the upgrade hint and `upgradeToPasskey` (a registration
/// without user presence), the signals, and an unknown passkey's typed error.
final class ModgudClientPasskeyLifecycleTests: XCTestCase {
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testUpgradeSignalsAndAnUnknownPasskey() async throws {
        harness = try await PasskeySignUpTests.makeHarness(issuerScheme: "http")
        let harness = self.harness!
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = ModgudClientFirstPartyTests.app(port, harness, clientID: "ios")
            try await app.requestCode(email: "ada@example.com")
            let session = try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            XCTAssertEqual(session.passkeyUpgrade, true, "no passkey under ios.acme.test yet")
            let device = SoftwarePasskeys(origin: "https://ios.acme.test")
            let upgraded = try await app.upgradeToPasskey(using: device)
            let noSignals = try await app.passkeySignals()
            XCTAssertEqual(noSignals.count, 1)
            let credentialID = try XCTUnwrap(noSignals.first?.allAcceptedCredentialIds.first)
            XCTAssertEqual(noSignals.first?.rpId, "ios.acme.test")
            XCTAssertEqual(noSignals.first?.name, "ada@example.com")

            // Deleted on the server, still on the device: the sign-in says which credential.
            try await app.deletePasskey(id: upgraded.id)
            let after = try await app.passkeySignals()
            XCTAssertEqual(after.first?.allAcceptedCredentialIds, [])
            try await app.signOut()
            do {
                try await app.signInWithPasskey(using: device)
                XCTFail("a deleted passkey signs nobody in")
            } catch let error as ModgudError {
                XCTAssertEqual(error, .unknownPasskey(credentialID: credentialID, rpID: "ios.acme.test"))
            }
        }
    }
}

extension ModgudClientPasskeyLifecycleTests {
    /// RFC 9470 in the library: with the realm's passkey step-up on (issue 65: off by default),
    /// enrollment past the realm's freshness answers the step-up challenge; without a handler
    /// the call throws `.reauthenticationRequired`, with one the person signs in again (a code
    /// here, never a refresh) and the enrollment goes through on the retry.
    func testAStepUpChallengeIsAnsweredByTheHandlerAndRetried() async throws {
        harness = try await PasskeySignUpTests.makeHarness(issuerScheme: "http") { $0.guards = AccountGuards(passkeyStepUp: true) }
        let harness = self.harness!
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = ModgudClientFirstPartyTests.app(port, harness, clientID: "ios")
            try await app.requestCode(email: "ada@example.com")
            try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            harness.clock.advance(11 * 60)
            let device = SoftwarePasskeys(origin: "https://ios.acme.test")
            do {
                try await app.enrollPasskey(using: device)
                XCTFail("a stale sign-in")
            } catch let error as ModgudError { XCTAssertEqual(error, .reauthenticationRequired) }

            let seen = Mutex<[ModgudClient.StepUpChallenge]>([])
            await app.setStepUpHandler { challenge in
                seen.withLock { $0.append(challenge) }
                try await app.requestCode(email: "ada@example.com")
                try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com", number: 2))
            }
            let enrolled = try await app.enrollPasskey(using: device)
            XCTAssertEqual(enrolled.displayName, "Passkey")
            XCTAssertEqual(seen.withLock { $0 }, [ModgudClient.StepUpChallenge(maxAge: 600, acrValues: nil)])
        }
    }
}

extension ModgudClientPasskeyLifecycleTests {
    /// Issue 46, item 3 in the library: a lost phone, a recovery code on another device, the
    /// lost phone's session ended, a passkey enrolled in the recovery session and signing in.
    func testARecoveryCodeBringsALostAccountBackThroughAPasskey() async throws {
        harness = try await PasskeySignUpTests.makeHarness(issuerScheme: "http")
        let harness = self.harness!
        _ = try await harness.core.administration.clients.update(realm: "dev", id: "ios", metadata: .init()) { $0.grants.insert(.recoveryCode) }
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let phone = ModgudClientFirstPartyTests.app(port, harness, clientID: "ios")
            try await phone.requestCode(email: "ada@example.com")
            try await phone.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            let codes = try await phone.generateRecoveryCodes()
            XCTAssertEqual(codes.count, 10)
            let remaining = try await phone.recoveryCodesRemaining()
            XCTAssertEqual(remaining, 10)

            let tablet = ModgudClientFirstPartyTests.app(port, harness, clientID: "ios")
            do {
                try await tablet.signIn(email: "ada@example.com", recoveryCode: "00000-00000")
                XCTFail("a wrong code")
            } catch let error as ModgudError {
                XCTAssertEqual(error, .oauth(code: "invalid_grant", description: "Invalid recovery code.", status: 400))
            }
            let recovery = try await tablet.signIn(email: "ada@example.com", recoveryCode: codes[0])
            XCTAssertTrue(recovery.isRecovery)
            XCTAssertNil(recovery.refreshToken)
            let sessions = try await tablet.sessions()
            XCTAssertEqual(sessions.count, 2)
            let lost = try XCTUnwrap(sessions.first { !$0.current })
            try await tablet.endSession(id: lost.id)
            do {
                _ = try await phone.recoveryCodesRemaining()
                XCTFail("the lost phone's session was ended")
            } catch is ModgudError {}

            let device = SoftwarePasskeys(origin: "https://ios.acme.test")
            try await tablet.enrollPasskey(using: device)
            let restored = try await tablet.signInWithPasskey(using: device)
            XCTAssertFalse(restored.isRecovery)
            let left = try await tablet.recoveryCodesRemaining()
            XCTAssertEqual(left, 9)
        }
    }
}
