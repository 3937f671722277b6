import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 69, item 2: the device authorization grant (RFC 8628) approved in the app with a
/// passkey, over a real socket. A TV (client `tv`) asks for a code; Ada, signed in on her phone
/// (client `ios`), types it, sees what asks, and approves with a user-verified passkey; the
/// TV's poll gets her tokens once. A phished approval without user verification, another
/// person's passkey, a denial, expiry, polling too fast and typing too many codes are refused.
final class DeviceGrantTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// A realm on `acme.test` with `ios` (RP-ID `ios.acme.test`), `web` (the realm's RP-ID) and
    /// `tv`, which holds the device grant and is named "Acme TV".
    func makeHarness() async throws -> (EmailSignInHarness, PasskeySteps) {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        let admin = harness.core.administration
        let scopes: Set<String> = ["openid", "email", "offline_access"]
        for (id, rpID) in [("ios", "ios.acme.test"), ("web", nil)] {
            _ = try await admin.clients.create(
                realm: "dev", id: id, settings: ClientSettings(type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: scopes, rpID: rpID),
                metadata: .init())
        }
        _ = try await admin.clients.create(
            realm: "dev", id: "tv",
            settings: ClientSettings(type: .public, displayName: "Acme TV", grants: [.deviceCode, .refreshToken], allowedScopes: scopes), metadata: .init())
        self.harness = harness
        return (harness, PasskeySteps(harness: harness))
    }

    static func authorize(_ client: some TestClientProtocol, clientID: String = "tv", scope: String = "openid email offline_access") async throws
        -> H.Reply
    {
        try await H.call(
            client, .post, "/connect/device_authorization", "client_id=\(clientID)&scope=\(scope.replacingOccurrences(of: " ", with: "+"))&device_name=Living+room+TV",
            headers: H.form)
    }

    static func poll(_ client: some TestClientProtocol, _ deviceCode: String, clientID: String = "tv") async throws -> H.Reply {
        try await H.token(client, [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode), ("client_id", clientID)])
    }

    static func verify(_ client: some TestClientProtocol, _ userCode: String, token: String?) async throws -> H.Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await H.call(client, .post, "/connect/device/verify", H.jsonBody(["user_code": userCode]), headers: headers)
    }

    static func decide(_ client: some TestClientProtocol, _ path: String, _ verified: H.Reply, assertion: String?, token: String?) async throws
        -> H.Reply
    {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let id = try XCTUnwrap(verified.json["authorization_id"] as? String, verified.body)
        let ceremony = try XCTUnwrap(verified.json["ceremonyId"] as? String, verified.body)
        let body = #"{"authorization_id":"\#(id)","ceremonyId":"\#(ceremony)"\#(assertion.map { #","assertion":\#($0)"# } ?? "")}"#
        return try await H.call(client, .post, path, body, headers: headers)
    }

    /// The challenge of a verify answer's ceremony.
    static func challenge(_ verified: H.Reply) throws -> [UInt8] {
        let options = try XCTUnwrap(verified.json["options"] as? [String: Any], verified.body)
        return try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
    }

    static func refused(_ reply: H.Reply, _ error: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(reply.status, .badRequest, reply.body, file: file, line: line)
        XCTAssertEqual(reply.json["error"] as? String, error, reply.body, file: file, line: line)
    }

    func testATVIsApprovedInTheAppWithAUserVerifiedPasskeyAndItsPollGetsTokensOnce() async throws {
        let (harness, steps) = try await makeHarness()
        try await harness.app.test(.live) { client in
            // Section 4: discovery names the endpoint and the grant.
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertEqual(discovery.json["device_authorization_endpoint"] as? String, "https://localhost/connect/device_authorization", discovery.body)
            XCTAssertTrue((discovery.json["grant_types_supported"] as? [String] ?? []).contains("urn:ietf:params:oauth:grant-type:device_code"))

            // Section 3.2.
            let asked = try await Self.authorize(client)
            XCTAssertEqual(asked.status, .ok, asked.body)
            XCTAssertEqual(asked.headers[.cacheControl], "no-store")
            let deviceCode = try XCTUnwrap(asked.json["device_code"] as? String)
            let userCode = try XCTUnwrap(asked.json["user_code"] as? String)
            XCTAssertNotNil(userCode.wholeMatch(of: /[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}/), userCode)
            XCTAssertEqual(asked.json["verification_uri"] as? String, "https://localhost/device")
            XCTAssertEqual(asked.json["verification_uri_complete"] as? String, "https://localhost/device?user_code=\(userCode)")
            XCTAssertEqual(asked.json["expires_in"] as? Int, 600)
            XCTAssertEqual(asked.json["interval"] as? Int, 5)

            // Section 3.5: pending; sooner than the interval, slow_down, and the interval grows.
            Self.refused(try await Self.poll(client, deviceCode), "authorization_pending")
            let tooFast = try await Self.poll(client, deviceCode)
            Self.refused(tooFast, "slow_down")
            XCTAssertTrue((tooFast.json["error_description"] as? String ?? "").contains("10 seconds"), tooFast.body)
            harness.clock.advance(10)
            Self.refused(try await Self.poll(client, deviceCode), "authorization_pending")

            // Ada signs in on her phone and has a passkey there.
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")

            // She types the code as people do (lower case, no dash) and sees what asks.
            let typed = userCode.lowercased().replacingOccurrences(of: "-", with: "")
            let shown = try await Self.verify(client, typed, token: token)
            XCTAssertEqual(shown.status, .ok, shown.body)
            XCTAssertEqual(shown.json["client_id"] as? String, "tv")
            XCTAssertEqual(shown.json["client_name"] as? String, "Acme TV")
            XCTAssertEqual(shown.json["device_name"] as? String, "Living room TV")
            XCTAssertEqual(shown.json["network"] as? String, "127.0.0.0/24", "the request's network, coarsened")
            XCTAssertEqual(shown.json["scope"] as? String, "openid email offline_access")
            let options = try XCTUnwrap(shown.json["options"] as? [String: Any])
            XCTAssertEqual(options["rpId"] as? String, "ios.acme.test", "the app's RP-ID")
            XCTAssertEqual(options["userVerification"] as? String, "required")

            // A phished approval: the passkey asserts without user verification. Refused, and
            // the ceremony is spent.
            var phished = SoftwareAuthenticator.AssertionOptions(challenge: try Self.challenge(shown), origin: "https://ios.acme.test")
            phished.flags = [.userPresent]
            let withoutUV = steps.json(steps.authenticator.assert(&credential, phished))
            let refusedUV = try await Self.decide(client, "/connect/device/approve", shown, assertion: withoutUV, token: token)
            XCTAssertEqual(refusedUV.status, .badRequest, refusedUV.body)
            XCTAssertTrue(refusedUV.body.contains("Device.PasskeyRefused"), refusedUV.body)
            harness.clock.advance(10)
            Self.refused(try await Self.poll(client, deviceCode), "authorization_pending")

            // With user verification it approves.
            let again = try await Self.verify(client, userCode, token: token)
            let assertion = steps.json(
                steps.authenticator.assert(&credential, .init(challenge: try Self.challenge(again), origin: "https://ios.acme.test")))
            let approved = try await Self.decide(client, "/connect/device/approve", again, assertion: assertion, token: token)
            XCTAssertEqual(approved.status, .ok, approved.body)
            XCTAssertEqual(approved.json["status"] as? String, "approved")
            // Approved once: the code no longer waits for anyone.
            let late = try await Self.verify(client, userCode, token: token)
            XCTAssertEqual(late.status, .notFound, late.body)

            // The TV's next poll gets Ada's tokens; the one after, nothing.
            harness.clock.advance(10)
            let tokens = try await Self.poll(client, deviceCode)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            let claims = try SignInClaimsTests.claims(try XCTUnwrap(tokens.json["id_token"] as? String))
            _ = try await H.requestCode(client, "ada@example.com")
            let onPhone = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com", number: 2), clientID: "ios", scope: "openid")
            let ada = try SignInClaimsTests.claims(try XCTUnwrap(onPhone.json["id_token"] as? String, onPhone.body))
            XCTAssertEqual(claims["sub"] as? String, ada["sub"] as? String)
            XCTAssertEqual(claims["aud"] as? String ?? (claims["aud"] as? [String])?.first, "tv")
            XCTAssertTrue((claims["amr"] as? [String] ?? []).contains("mfa"), "\(claims)")
            XCTAssertNotNil(tokens.json["refresh_token"])
            harness.clock.advance(10)
            Self.refused(try await Self.poll(client, deviceCode), "invalid_grant")

            // Neither code is stored in the clear.
            let stored = try await harness.databaseText()
            XCTAssertFalse(stored.contains(String(deviceCode.split(separator: "~")[1])), "the device code's secret")
            XCTAssertFalse(stored.contains(userCode.replacingOccurrences(of: "-", with: "")), "the user code")
        }
    }

    func testThePageApprovesOrDeniesAndEveryOtherCodeIsRefused() async throws {
        let (harness, steps) = try await makeHarness()
        try await harness.app.test(.live) { client in
            // The realm's page: what it says, and how it may be loaded.
            let page = try await H.call(client, .get, "/device?user_code=bcdf-ghjk", "", headers: [:])
            XCTAssertEqual(page.status, .ok)
            XCTAssertTrue(page.body.contains("Did you start this?"), page.body)
            XCTAssertTrue(page.body.contains(#"value="BCDF-GHJK""#), "the code from verification_uri_complete, prefilled")
            XCTAssertTrue(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            let forged = try await H.call(client, .get, "/device?user_code=%22%3E%3Cscript%3E", "", headers: [:])
            XCTAssertFalse(forged.body.contains("<script>"), "anything else is not echoed")
            let script = try await H.call(client, .get, "/device/approve.js", "", headers: [:])
            XCTAssertTrue(script.body.contains("navigator.credentials.get"), script.body)

            // Ada and Bo have passkeys under the realm's own RP-ID (the page's, and the `web` app's).
            let adaToken = try await steps.signInWithCode(client, "ada@example.com", clientID: "web")
            var (adaKey, _) = try await steps.enroll(client, token: adaToken, origin: "https://acme.test")
            let boToken = try await steps.signInWithCode(client, "bo@example.com", clientID: "web")
            var (boKey, _) = try await steps.enroll(client, token: boToken, origin: "https://acme.test")

            // Denied on the page: the TV's poll says so.
            let first = try await Self.authorize(client)
            let onPage = try await Self.verify(client, try XCTUnwrap(first.json["user_code"] as? String), token: nil)
            XCTAssertEqual(onPage.status, .ok, onPage.body)
            XCTAssertEqual((onPage.json["options"] as? [String: Any])?["rpId"] as? String, "acme.test", "the page asserts for the realm's RP-ID")
            let denied = try await Self.decide(client, "/connect/device/deny", onPage, assertion: nil, token: nil)
            XCTAssertEqual(denied.status, .ok, denied.body)
            Self.refused(try await Self.poll(client, try XCTUnwrap(first.json["device_code"] as? String)), "access_denied")

            // Approved on the page with Ada's passkey.
            let second = try await Self.authorize(client)
            let shown = try await Self.verify(client, try XCTUnwrap(second.json["user_code"] as? String), token: nil)
            let assertion = steps.json(steps.authenticator.assert(&adaKey, .init(challenge: try Self.challenge(shown), origin: "https://acme.test")))
            let approved = try await Self.decide(client, "/connect/device/approve", shown, assertion: assertion, token: nil)
            XCTAssertEqual(approved.status, .ok, approved.body)
            let reply1 = try await Self.poll(client, try XCTUnwrap(second.json["device_code"] as? String))
            XCTAssertEqual(reply1.status, .ok)

            // Bo's app cannot approve with Ada's passkey, nor Ada's app with Bo's.
            let third = try await Self.authorize(client)
            let thirdCode = try XCTUnwrap(third.json["user_code"] as? String)
            let inBosApp = try await Self.verify(client, thirdCode, token: boToken)
            let adas = steps.json(steps.authenticator.assert(&adaKey, .init(challenge: try Self.challenge(inBosApp), origin: "https://acme.test")))
            let notHis = try await Self.decide(client, "/connect/device/approve", inBosApp, assertion: adas, token: boToken)
            XCTAssertEqual(notHis.status, .badRequest, notHis.body)
            let inAdasApp = try await Self.verify(client, thirdCode, token: adaToken)
            let bos = steps.json(steps.authenticator.assert(&boKey, .init(challenge: try Self.challenge(inAdasApp), origin: "https://acme.test")))
            let reply2 = try await Self.decide(client, "/connect/device/approve", inAdasApp, assertion: bos, token: adaToken)
            XCTAssertEqual(reply2.status, .badRequest)
            // A ceremony of one code does not approve another.
            let fourth = try await Self.authorize(client)
            let otherCeremony = try await Self.verify(client, try XCTUnwrap(fourth.json["user_code"] as? String), token: nil)
            var swapped = otherCeremony
            swapped.body = otherCeremony.body.replacingOccurrences(
                of: try XCTUnwrap(otherCeremony.json["authorization_id"] as? String), with: try XCTUnwrap(inBosApp.json["authorization_id"] as? String))
            let crossed = steps.json(steps.authenticator.assert(&adaKey, .init(challenge: try Self.challenge(otherCeremony), origin: "https://acme.test")))
            let reply3 = try await Self.decide(client, "/connect/device/approve", swapped, assertion: crossed, token: nil)
            XCTAssertEqual(reply3.status, .badRequest)

            // Expired: ten minutes later the poll says so and the code is no longer found.
            harness.clock.advance(601)
            Self.refused(try await Self.poll(client, try XCTUnwrap(third.json["device_code"] as? String)), "expired_token")
            let reply4 = try await Self.verify(client, thirdCode, token: nil)
            XCTAssertEqual(reply4.status, .notFound)

            // Codes that are not codes, and a device code not of this client or forged.
            let reply5 = try await Self.verify(client, "AEIO-UAEI", token: nil)
            XCTAssertEqual(reply5.status, .notFound, "vowels are never in a code")
            let reply6 = try await Self.verify(client, "BCDF-GHJK", token: nil)
            XCTAssertEqual(reply6.status, .notFound)
            let fifth = try await Self.authorize(client)
            let fifthCode = try XCTUnwrap(fifth.json["device_code"] as? String)
            Self.refused(try await Self.poll(client, String(fifthCode.dropLast()) + "x"), "invalid_grant")
            Self.refused(try await Self.poll(client, "not-a-device-code"), "invalid_grant")
            Self.refused(try await Self.poll(client, fifthCode, clientID: "ios"), "unauthorized_client")
            Self.refused(try await Self.authorize(client, clientID: "ios"), "unauthorized_client")
            Self.refused(try await Self.authorize(client, scope: "openid admin"), "invalid_scope")
        }
    }

    func testTypingCodesIsLimitedPerSource() async throws {
        let harness = try await EmailSignInHarness(settings: {
            $0.primaryDomain = "acme.test"
            $0.rateLimitOverrides[RateLimitPolicy.deviceUserCodePerIP.name] = RateLimitSetting(limit: 3, windowSeconds: 3600, burst: 3)
        })
        self.harness = harness
        try await harness.app.test(.live) { client in
            for _ in 0..<3 {
                let reply = try await Self.verify(client, "BCDF-GHJK", token: nil)
                XCTAssertEqual(reply.status, .notFound)
            }
            let limited = try await Self.verify(client, "BCDF-GHJK", token: nil)
            XCTAssertEqual(limited.status, .tooManyRequests, limited.body)
            XCTAssertEqual(limited.json["policy"] as? String, "device.user-code")
            XCTAssertNotNil(limited.headers[.retryAfter])
        }
    }

    /// Two polls at once after the approval, on one device code: one gets the tokens, decided by
    /// the store; the other `invalid_grant`.
    func testRacingPollsRedeemOnce() async throws {
        let (harness, steps) = try await makeHarness()
        try await harness.app.test(.live) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (key, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let asked = try await Self.authorize(client)
            let deviceCode = try XCTUnwrap(asked.json["device_code"] as? String)
            let shown = try await Self.verify(client, try XCTUnwrap(asked.json["user_code"] as? String), token: token)
            let assertion = steps.json(steps.authenticator.assert(&key, .init(challenge: try Self.challenge(shown), origin: "https://ios.acme.test")))
            let reply7 = try await Self.decide(client, "/connect/device/approve", shown, assertion: assertion, token: token)
            XCTAssertEqual(reply7.status, .ok)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<6 { group.addTask { try await Self.poll(client, deviceCode).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(statuses.filter { $0 == .ok }.count, 1, "\(statuses)")
            XCTAssertEqual(statuses.filter { $0 == .badRequest }.count, 5, "\(statuses)")
        }
    }
}
