import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 14, item 1: passkey sign-up, its gates, its race, address confirmation, and proof of
/// the mailbox against squatting.
final class PasskeySignUpTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// A realm with an app ("ios") that may sign users up with passkeys under ios.acme.test.
    static func makeHarness(issuerScheme: String = "https", _ settings: @escaping (inout RealmSettings) -> Void = { _ in }) async throws
        -> EmailSignInHarness
    {
        let harness = try await EmailSignInHarness(
            settings: {
                $0.primaryDomain = "acme.test"
                $0.registrationFields = RegistrationFields(firstname: .optional, lastname: .optional)
                settings(&$0)
            }, issuerScheme: issuerScheme)
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(
                type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "email", "profile", "offline_access"],
                audiences: ["https://api.acme.test"], rpID: "ios.acme.test", passkeySignUp: true),
            metadata: .init())
        return harness
    }

    func testSignUpCreatesTheAccountAndItsPasskeyAndTheFlowIsGated() async throws {
        let harness = try await Self.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.router) { client in
            let begun = try await steps.begin(client, #"{"ClientId":"ios","Email":"Ada@Example.com","FirstName":"Ada","DisplayName":"Ada L."}"#)
            XCTAssertEqual(begun.reply.status, .ok, begun.reply.body)
            let options = try XCTUnwrap(begun.reply.json["options"] as? [String: Any])
            XCTAssertEqual((options["rp"] as? [String: Any])?["id"] as? String, "ios.acme.test", "the client's RP-ID")
            XCTAssertEqual((options["user"] as? [String: Any])?["name"] as? String, "ada@example.com")
            XCTAssertEqual((options["user"] as? [String: Any])?["displayName"] as? String, "Ada L.")
            let selection = try XCTUnwrap(options["authenticatorSelection"] as? [String: Any])
            XCTAssertEqual(selection["residentKey"] as? String, "required")
            XCTAssertEqual(selection["userVerification"] as? String, "required")
            XCTAssertEqual(options["attestation"] as? String, "none")

            let (credential, attestation) = try steps.create(begun)
            let signedUp = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
            XCTAssertEqual(signedUp.status, .ok, signedUp.body)
            let access = try XCTUnwrap(signedUp.json["access_token"] as? String)
            XCTAssertNotNil(signedUp.json["refresh_token"])
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual(userinfo.json["email"] as? String, "ada@example.com")
            XCTAssertEqual(userinfo.json["email_verified"] as? Bool, false, "unconfirmed until a code proves the address")
            XCTAssertEqual(userinfo.json["given_name"] as? String, "Ada")
            let claims = try Self.idTokenClaims(signedUp)
            XCTAssertEqual(claims["amr"] as? [String], ["hwk", "mfa"])
            let passkeys = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(passkeys.body.utf8)) as? [Any])?.count, 1, passkeys.body)

            // The new passkey signs in (usernameless), and the user handle is the user id.
            let signedIn = try await steps.signIn(client, credential)
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            XCTAssertEqual(try Self.idTokenClaims(signedIn)["sub"] as? String, claims["sub"] as? String)

            // Single use.
            let again = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
            XCTAssertEqual(again.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(again.json["error_description"] as? String, "Invalid or expired passkey assertion.")

            // A wrong attestation spends the ceremony and creates nothing.
            let other = try await steps.begin(client, #"{"ClientId":"ios","Email":"eve@example.com"}"#)
            let (_, foreign) = try steps.create(other, origin: "https://evil.test")
            let refused = try await steps.redeem(client, ceremony: other.ceremony, attestation: foreign)
            XCTAssertEqual(refused.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let value1 = try await harness.userCount("eve@example.com")
            XCTAssertEqual(value1, 0)
            let both = try await H.token(
                client, [("grant_type", "urn:cocoar:passkey"), ("client_id", "ios"), ("ceremony_id", other.ceremony), ("assertion", "{}"), ("attestation", "{}")])
            XCTAssertEqual(both.json["error"] as? String, "invalid_request", "an assertion or an attestation, not both")

            // Gates: the client's permission, then the realm's posture; bad input is a 400.
            let plain = try await steps.begin(client, #"{"ClientId":"plain","Email":"x@example.com"}"#)
            XCTAssertEqual(plain.reply.status, .forbidden)
            XCTAssertEqual(plain.reply.json["title"] as? String, "Passkey.SignUpNotAllowed")
            let allowed = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/plain", #"{"PasskeySignUp":true}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(allowed.status, .ok, allowed.body)
            XCTAssertEqual((allowed.json["Client"] as? [String: Any])?["PasskeySignUp"] as? Bool, true, allowed.body)
            let nowAllowed = try await steps.begin(client, #"{"ClientId":"plain","Email":"x@example.com"}"#)
            XCTAssertEqual(nowAllowed.reply.status, .ok, "the operator turned it on")
            for (body, title) in [
                (#"{"ClientId":"ios","Email":"not an address"}"#, "Passkey.InvalidEmail"),
                (#"{"ClientId":"nobody","Email":"x@example.com"}"#, "Passkey.UnknownClient"),
                (#"{"ClientId":"ios","Email":"x@example.com","Phone":"1"}"#, "Request.UnknownMember"),
            ] {
                let bad = try await steps.begin(client, body)
                XCTAssertEqual(bad.reply.status, .badRequest, body)
                XCTAssertEqual(bad.reply.json["title"] as? String, title, bad.reply.body)
            }
            let required = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"RegistrationFields":{"Lastname":"Required"}}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(required.status, .ok, required.body)
            let nameless = try await steps.begin(client, #"{"ClientId":"ios","Email":"x@example.com","LastName":"  "}"#)
            XCTAssertEqual(nameless.reply.json["title"] as? String, "Passkey.FieldRequired", "the realm's registration fields apply")
            let closing = try await steps.begin(client, #"{"ClientId":"ios","Email":"late@example.com","LastName":"Late"}"#)
            let off = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"RegistrationPosture":"Off"}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(off.status, .ok, off.body)
            let disabled = try await steps.begin(client, #"{"ClientId":"ios","Email":"y@example.com","LastName":"Y"}"#)
            XCTAssertEqual(disabled.reply.json["title"] as? String, "Passkey.SignUpDisabled")
            let (_, late) = try steps.create(closing)
            let closed = try await steps.redeem(client, ceremony: closing.ceremony, attestation: late)
            XCTAssertEqual(closed.json["error"] as? String, "unauthorized_client", "the posture is checked again at redemption")
            let value2 = try await harness.userCount("late@example.com")
            XCTAssertEqual(value2, 0)
        }
    }

    /// Issue 23: a sign-up whose credential is registered already says so; it is not mistaken
    /// for an address that has an account (both are unique indexes, in different projections).
    func testAReusedCredentialIsReportedAsSuchNotAsAnExistingAccount() async throws {
        let harness = try await Self.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.router) { client in
            let first = try await steps.begin(client, #"{"ClientId":"ios","Email":"first@example.com"}"#)
            let (credential, attestation) = try steps.create(first)
            let signedUp = try await steps.redeem(client, ceremony: first.ceremony, attestation: attestation)
            XCTAssertEqual(signedUp.status, .ok, signedUp.body)
            // The same authenticator credential again, for another address.
            let second = try await steps.begin(client, #"{"ClientId":"ios","Email":"second@example.com"}"#)
            let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(second.options["challenge"] as? String)))
            let reused = steps.authenticator.register(credential, .init(challenge: challenge, origin: "https://ios.acme.test"))
            let refused = try await steps.redeem(client, ceremony: second.ceremony, attestation: String(decoding: reused.json, as: UTF8.self))
            XCTAssertEqual(refused.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(refused.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let created = try await harness.userCount("second@example.com")
            XCTAssertEqual(created, 0, "nothing was written")
        }
    }

    func testAnExistingAddressBeginsAlikeAndCreatesNothing() async throws {
        let harness = try await Self.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.router) { client in
            let known = try await steps.begin(client, #"{"ClientId":"ios","Email":"bob@example.com"}"#)
            let unknown = try await steps.begin(client, #"{"ClientId":"ios","Email":"new@example.com"}"#)
            XCTAssertEqual(known.reply.status, unknown.reply.status)
            XCTAssertEqual(Self.shape(known.reply.json), Self.shape(unknown.reply.json), "begin answers alike for a known address")

            let before = try await Self.counts(harness)
            let (_, attestation) = try steps.create(known)
            let exists = try await steps.redeem(client, ceremony: known.ceremony, attestation: attestation)
            XCTAssertEqual(exists.status, .badRequest)
            XCTAssertEqual(exists.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(exists.json["error_description"] as? String, PasskeyService.accountExists.description)
            let after = try await Self.counts(harness)
            XCTAssertEqual(after.users, before.users, "no user")
            XCTAssertEqual(after.passkeys, before.passkeys, "no passkey")
            XCTAssertEqual(after.families, before.families, "no session")
        }
    }

    /// Twenty concurrent redemptions of one ceremony, over real sockets: one user. Two
    /// ceremonies for one address redeemed at once: one user, decided by the unique index.
    func testConcurrentRedemptionsCreateExactlyOneUser() async throws {
        let harness = try await Self.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.live) { client in
            let begun = try await steps.begin(client, #"{"ClientId":"ios","Email":"race@example.com"}"#)
            let (_, attestation) = try steps.create(begun)
            let statuses = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let reply = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
                        return (reply.status, reply.json["error"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(statuses.filter { $0.0 == .ok }.count, 1, "\(statuses)")
            XCTAssertEqual(statuses.filter { $0.1 == "invalid_grant" }.count, 19, "\(statuses)")
            let value3 = try await harness.userCount("race@example.com")
            XCTAssertEqual(value3, 1)

            let first = try await steps.begin(client, #"{"ClientId":"ios","Email":"twice@example.com"}"#)
            let second = try await steps.begin(client, #"{"ClientId":"ios","Email":"twice@example.com"}"#)
            let (_, one) = try steps.create(first)
            let (_, two) = try steps.create(second)
            async let a = steps.redeem(client, ceremony: first.ceremony, attestation: one)
            async let b = steps.redeem(client, ceremony: second.ceremony, attestation: two)
            let replies = try await [a, b]
            XCTAssertEqual(replies.filter { $0.status == .ok }.count, 1, replies.map(\.body).joined(separator: "\n"))
            XCTAssertEqual(replies.filter { $0.json["error_description"] as? String == PasskeyService.accountExists.description }.count, 1)
            let value4 = try await harness.userCount("twice@example.com")
            XCTAssertEqual(value4, 1)
            let passkeys = try await harness.core.pool.query("SELECT count(*) FROM passkeys").first!.decode(Int.self, at: 0)
            XCTAssertEqual(passkeys, 2, "one passkey per account made")
        }
    }

    /// Erasing an address shreds the key its pending sign-up sealed it under: the ceremony
    /// can no longer create the account (issue 13 meets issue 14).
    func testErasingAnAddressVoidsItsPendingSignUp() async throws {
        let harness = try await Self.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.router) { client in
            let begun = try await steps.begin(client, #"{"ClientId":"ios","Email":"gone@example.com","FirstName":"Gone"}"#)
            let (_, attestation) = try steps.create(begun)
            let erased = try await harness.core.eraser.erase(realm: "dev", "gone@example.com", metadata: .init())
            XCTAssertEqual(erased.keysShredded, 1, "the pending sign-up's key")
            let reply = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
            XCTAssertEqual(reply.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let counts = try await Self.counts(harness)
            XCTAssertEqual(counts.users, 0)
            XCTAssertEqual(counts.passkeys, 0)
            let text = try await harness.databaseText()
            XCTAssertFalse(text.contains("gone@example.com") || text.contains("Gone"), "no plaintext anywhere")
        }
    }

    // MARK: Helpers

    static func idTokenClaims(_ reply: H.Reply) throws -> [String: Any] {
        let token = try XCTUnwrap(reply.json["id_token"] as? String)
        let payload = try XCTUnwrap(Base64URL.decode(String(token.split(separator: ".")[1])))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    /// The members and nested member names of an answer, without values.
    static func shape(_ json: [String: Any]) -> [String] {
        json.flatMap { key, value in [key] + ((value as? [String: Any]).map { shape($0).map { "\(key).\($0)" } } ?? []) }.sorted()
    }

    static func counts(_ harness: EmailSignInHarness) async throws -> (users: Int, passkeys: Int, families: Int) {
        let row = try await harness.core.pool.query(
            "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM passkeys), (SELECT count(*) FROM token_families)"
        ).first!
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1), try row.decode(Int.self, at: 2))
    }
}

/// The app's side of a passkey sign-up, with the software authenticator.
struct SignUpSteps: Sendable {
    typealias H = EmailSignInHarness
    let harness: EmailSignInHarness
    var authenticator = SoftwareAuthenticator()

    struct Begun: @unchecked Sendable {
        var reply: H.Reply
        var ceremony: String { reply.json["ceremonyId"] as? String ?? "" }
        var options: [String: Any] { reply.json["options"] as? [String: Any] ?? [:] }
    }

    func begin(_ client: some TestClientProtocol, _ body: String) async throws -> Begun {
        Begun(reply: try await H.call(client, .post, "/connect/passkey/register/begin", body, headers: H.json))
    }

    /// The platform authenticator makes the credential from creation options.
    func create(_ begun: Begun, origin: String = "https://ios.acme.test") throws -> (SoftwareCredential, String) {
        try Self.create(options: begun.options, authenticator: authenticator, origin: origin)
    }

    static func create(options: [String: Any], authenticator: SoftwareAuthenticator, origin: String) throws -> (SoftwareCredential, String) {
        let rp = try XCTUnwrap(options["rp"] as? [String: Any])
        let user = try XCTUnwrap(options["user"] as? [String: Any])
        let credential = SoftwareCredential(
            algorithm: .es256, rpID: try XCTUnwrap(rp["id"] as? String), userHandle: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(user["id"] as? String))))
        let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
        let attestation = authenticator.register(credential, .init(challenge: challenge, origin: origin))
        return (credential, String(decoding: attestation.json, as: UTF8.self))
    }

    func redeem(_ client: some TestClientProtocol, ceremony: String, attestation: String, clientID: String = "ios") async throws -> H.Reply {
        try await H.token(
            client,
            [("grant_type", "urn:cocoar:passkey"), ("client_id", clientID), ("ceremony_id", ceremony), ("attestation", attestation),
             ("scope", "openid email profile offline_access")])
    }

    /// A usernameless sign-in with `credential`.
    func signIn(_ client: some TestClientProtocol, _ credential: SoftwareCredential) async throws -> H.Reply {
        let steps = PasskeySteps(harness: harness)
        let (ceremony, challenge, _) = try await steps.begin(client, clientID: "ios")
        var device = credential
        let assertion = authenticator.assert(&device, .init(challenge: challenge, origin: "https://ios.acme.test"))
        return try await steps.redeem(client, clientID: "ios", ceremony: ceremony, assertion: steps.json(assertion), scope: "openid email")
    }
}
