import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 14, items 2 and 3: enrollment needs a fresh sign-in (or the enrollment scope), and
/// passkeys can be read one at a time, renamed, and show the provider that holds them.
final class PasskeyManagementTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    /// Google Password Manager's AAGUID, as its authenticator attests it.
    static let googleAAGUID = Array(UUID(uuidString: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4")!.uuidBytes)

    override func tearDown() async throws {
        await harness?.close()
    }

    func makeHarness() async throws -> EmailSignInHarness {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(
                type: .public, grants: [.otp, .passkey, .refreshToken],
                allowedScopes: ["openid", "offline_access", PasskeyService.enrollmentScope], rpID: "ios.acme.test"),
            metadata: .init())
        self.harness = harness
        return harness
    }

    static func signIn(_ harness: EmailSignInHarness, _ client: some TestClientProtocol, _ email: String, number: Int, scope: String) async throws
        -> String
    {
        _ = try await H.requestCode(client, email)
        let reply = try await H.redeemCode(client, email, try await harness.code(for: email, number: number), clientID: "ios", scope: scope)
        XCTAssertEqual(reply.status, .ok, reply.body)
        return try XCTUnwrap(reply.json["access_token"] as? String)
    }

    func testWithTheStepUpGuardEnrollmentNeedsAFreshSignInOrTheEnrollmentScope() async throws {
        let harness = try await makeHarness()
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.passkeyStepUp = true }
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.router) { client in
            let token = try await Self.signIn(harness, client, "ada@example.com", number: 1, scope: "openid offline_access")
            let fresh = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(fresh.status, .ok, "a sign-in under 10 minutes old enrolls")

            // Eleven minutes later the same (still live) token may not.
            harness.clock.advance(11 * 60)
            let stale = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            // RFC 9470 (issue 46): 401 with the step-up challenge and the realm's freshness as
            // max_age; the problem's code is kept.
            XCTAssertEqual(stale.status, .unauthorized, stale.body)
            XCTAssertEqual(stale.json["title"] as? String, "Passkey.ReauthenticationRequired")
            let challenge = stale.headers[values: .wwwAuthenticate].joined(separator: " | ")
            XCTAssertTrue(challenge.hasPrefix("Bearer "), challenge)
            XCTAssertTrue(challenge.contains(#"error="insufficient_user_authentication""#), challenge)
            XCTAssertTrue(challenge.contains("max_age=600"), challenge)
            let listed = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(listed.status, .ok, "the token still works for everything else")
            let ceremony = try XCTUnwrap(fresh.json["ceremonyId"] as? String)
            let completing = try await H.call(
                client, .post, "/connect/passkey/enroll", #"{"ceremonyId":"\#(ceremony)","attestation":{}}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(completing.status, .unauthorized, "completing a ceremony begun while fresh needs a fresh sign-in too")

            // The enrollment scope enrolls whatever the sign-in's age.
            harness.clock.advance(121)
            let scoped = try await Self.signIn(harness, client, "ada@example.com", number: 2, scope: "openid \(PasskeyService.enrollmentScope)")
            harness.clock.advance(11 * 60)
            _ = try await steps.enroll(client, token: scoped, origin: "https://ios.acme.test")

            // The realm decides how fresh is fresh.
            let patched = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"SessionLimits":{"EnrollmentFreshnessMinutes":60}}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(patched.status, .ok, patched.body)
            let relaxed = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(scoped))
            XCTAssertEqual(relaxed.status, .ok)
            let invalid = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"SessionLimits":{"EnrollmentFreshnessMinutes":0}}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(invalid.json["title"] as? String, "Session.InvalidEnrollmentFreshness")
        }
    }

    func testGetRenameAndProviderNames() async throws {
        let harness = try await makeHarness()
        var googleSteps = PasskeySteps(harness: harness)
        googleSteps.authenticator = SoftwareAuthenticator(aaguid: Self.googleAAGUID)
        let steps = googleSteps
        let plain = PasskeySteps(harness: harness)
        try await harness.app.test(.router) { client in
            let ada = try await Self.signIn(harness, client, "ada@example.com", number: 1, scope: "openid offline_access")
            let (_, google) = try await steps.enroll(client, token: ada, origin: "https://ios.acme.test", name: "Ada's Pixel")
            let (_, software) = try await plain.enroll(client, token: ada, origin: "https://ios.acme.test", name: "Ada's key")

            let one = try await H.call(client, .get, "/connect/passkey/\(google)", "", headers: PasskeySteps.bearer(ada))
            XCTAssertEqual(one.status, .ok, one.body)
            XCTAssertEqual(one.json["DisplayName"] as? String, "Ada's Pixel")
            let provider = try XCTUnwrap(one.json["Provider"] as? [String: Any])
            XCTAssertEqual(provider["Name"] as? String, "Google Password Manager")
            XCTAssertEqual(provider["Aaguid"] as? String, "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4")
            XCTAssertTrue((provider["IconLight"] as? String ?? "").hasPrefix("data:image/"), "icons ship with the product")
            let generic = try await H.call(client, .get, "/connect/passkey/\(software)", "", headers: PasskeySteps.bearer(ada))
            XCTAssertEqual((generic.json["Provider"] as? [String: Any])?["Name"] as? String, "Passkey", "a zero AAGUID says nothing")

            let renamed = try await H.call(
                client, .patch, "/connect/passkey/\(google)", #"{"DisplayName":"  Work phone  "}"#, headers: PasskeySteps.bearer(ada, json: true))
            XCTAssertEqual(renamed.status, .ok, renamed.body)
            XCTAssertEqual(renamed.json["DisplayName"] as? String, "Work phone")
            let list = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(ada))
            XCTAssertTrue(list.body.contains("Work phone") && !list.body.contains("Ada's Pixel"), list.body)
            for bad in [#"{"DisplayName":"   "}"#, #"{"DisplayName":"\#(String(repeating: "x", count: 65))"}"#] {
                let refused = try await H.call(client, .patch, "/connect/passkey/\(google)", bad, headers: PasskeySteps.bearer(ada, json: true))
                XCTAssertEqual(refused.json["title"] as? String, "Passkey.InvalidName", refused.body)
            }
            let unknownMember = try await H.call(
                client, .patch, "/connect/passkey/\(google)", #"{"Name":"x"}"#, headers: PasskeySteps.bearer(ada, json: true))
            XCTAssertEqual(unknownMember.status, .badRequest)

            // Another user's passkey is 404 for get and rename, never 403.
            let bob = try await Self.signIn(harness, client, "bob@example.com", number: 1, scope: "openid offline_access")
            let foreignGet = try await H.call(client, .get, "/connect/passkey/\(google)", "", headers: PasskeySteps.bearer(bob))
            XCTAssertEqual(foreignGet.status, .notFound)
            let foreignRename = try await H.call(
                client, .patch, "/connect/passkey/\(google)", #"{"DisplayName":"Mine now"}"#, headers: PasskeySteps.bearer(bob, json: true))
            XCTAssertEqual(foreignRename.status, .notFound)

            // The admin view names the provider too; a rebuild keeps name and provider.
            let found = try await harness.core.administration.users.find(realm: "dev", "ada@example.com")
            let userID = try XCTUnwrap(found)
            let adminList = try await harness.core.administration.users.passkeys(realm: "dev", userID: userID)
            XCTAssertEqual(Set(adminList.map(\.provider.name)), ["Google Password Manager", "Passkey"])
        }
    }
}

extension UUID {
    var uuidBytes: [UInt8] {
        withUnsafeBytes(of: uuid) { Array($0) }
    }
}
