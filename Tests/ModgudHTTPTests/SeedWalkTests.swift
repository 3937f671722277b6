import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 65: the seed walk. An app team reads the native-app guide top to bottom and codes
/// each request as printed; on a default realm every documented answer comes back, tokens
/// from a sign-in, a refresh, a sign-in narrowed by `resource`, and eleven minutes after the
/// sign-in (the clock moved, not slept) included. Then the Errors table, row by row
/// (`SeedWalkTests+Errors.swift`), and Auth0's sign-up, login and My Account enrollment as
/// seed 002 prints them, decoded with Auth0's SDKs' models (`SeedWalkTests+Auth0.swift`).
final class SeedWalkTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// Part B on a default realm: every flow, every token kind, the 11-minute mark.
    func testTheGuideWalksThroughOnADefaultRealm() async throws {
        harness = try await SeedWalk.makeHarness()
        try await walkTheGuide(stepUp: false)
    }

    /// The same walk on a realm whose operator turned on the passkey step-up: the passkey
    /// changes past the freshness answer RFC 9470's challenge, and a new sign-in (what
    /// `ModgudClient`'s step-up handler does: `ModgudClientTests`) meets it.
    func testWithTheStepUpGuardTheWalkShowsTheChallengeAndTheRecovery() async throws {
        harness = try await SeedWalk.makeHarness(guards: AccountGuards(passkeyStepUp: true))
        try await walkTheGuide(stepUp: true)
    }

    func walkTheGuide(stepUp: Bool) async throws {
        let harness = harness!
        let walk = SeedWalk(harness: harness)
        let email = "ada@example.com"
        try await harness.app.test(.live) { client in
            // "Required identity fields": the client reads the policy and renders it.
            let info = try await H.call(client, .get, "/api/app-info", "", headers: [:])
            let fields = try XCTUnwrap(info.json["RegistrationFields"] as? [String: String], "app-info: \(info.body)")
            XCTAssertEqual(fields["Email"], "Required", "app-info")
            XCTAssertEqual(fields["Firstname"], "Optional", "app-info: names are optional by default")
            XCTAssertEqual(fields["Lastname"], "Optional", "app-info: names are optional by default")

            // Flow 1 with the optional `resource`, signing up (JIT-on-OTP): names persisted.
            let first = try await walk.signInWithCode(client, email, number: 1, names: ("Ada", "Lovelace"), resource: SeedWalk.api, step: "Flow 1")
            let narrowed = try XCTUnwrap(first.json["access_token"] as? String)
            let person = try await harness.core.tokenIntrospection.liveAccessToken(realm: "dev", token: narrowed)
            XCTAssertEqual(person?.audiences, [SeedWalk.api], "Flow 1: resource narrows the token's aud (RFC 8707)")
            let user = try await harness.core.administration.users.state(realm: "dev", id: try XCTUnwrap(person?.userID))
            let profile = try await harness.core.vault!.profile(of: user)
            XCTAssertEqual(profile.firstName, "Ada", "Required identity fields: on registration they are persisted")
            XCTAssertEqual(profile.lastName, "Lovelace", "Required identity fields: on registration they are persisted")

            // First-run bootstrap with that same (narrowed) token, then list.
            let enrolled = try await walk.enroll(client, token: narrowed, name: "Ada's phone")
            XCTAssertEqual(enrolled.reply.status, .ok, "Bootstrap: enroll with the token from Flow 1: \(enrolled.reply.body)")
            var credential = try XCTUnwrap(enrolled.credential, "Bootstrap")
            let listed = try await H.call(client, .get, "/connect/passkey", "", headers: SeedWalk.bearer(narrowed))
            XCTAssertEqual(listed.status, .ok, "Manage: list with the token from Flow 1: \(listed.body)")
            let passkeys = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [[String: Any]], "Manage: list")
            XCTAssertEqual(passkeys.count, 1, "Manage: list")
            XCTAssertEqual(Set(passkeys.first?.keys.map { $0 } ?? []).isSuperset(of: ["Id", "DisplayName", "CreatedAt"]), true, "Manage: list members")
            XCTAssertNil(passkeys.first?["LastUsedAt"], "Manage: LastUsedAt is omitted while never used")

            // Flow 3, narrowed too; the ceremony is single use.
            let byPasskey = try await walk.signInWithPasskey(client, &credential, resource: SeedWalk.api, step: "Flow 3")
            SeedWalk.assertTokenResponse(byPasskey, step: "Flow 3")

            // Flow 2, no resource; then the guide's refresh, which carries `resource`.
            let requested = try await H.call(client, .post, "/api/account/magic-link/request", H.jsonBody(["Email": email]), headers: H.json)
            XCTAssertEqual(requested.status, .ok, "Flow 2: request a link: \(requested.body)")
            let link = try await harness.magicLink(for: email)
            let byLink = try await H.call(
                client, .post, "/connect/token",
                SeedWalk.form([
                    ("grant_type", "urn:cocoar:magic"), ("client_id", SeedWalk.clientID), ("user_id", link.userID), ("magic_token", link.token),
                    ("scope", "openid offline_access"),
                ]), headers: H.form)
            XCTAssertEqual(byLink.status, .ok, "Flow 2: redeem: \(byLink.body)")
            SeedWalk.assertTokenResponse(byLink, step: "Flow 2")
            let refreshed = try await walk.refresh(client, try XCTUnwrap(byLink.json["refresh_token"] as? String))
            XCTAssertEqual(refreshed.status, .ok, "Refresh with resource after a sign-in without it: \(refreshed.body)")
            let refreshedToken = try XCTUnwrap(refreshed.json["access_token"] as? String, "Refresh")
            let fromRefresh = try await H.call(client, .get, "/connect/passkey", "", headers: SeedWalk.bearer(refreshedToken))
            XCTAssertEqual(fromRefresh.status, .ok, "Manage: list with a refreshed token: \(fromRefresh.body)")

            // Eleven minutes after the sign-ins: the access tokens live 15 minutes.
            harness.clock.advance(11 * 60)
            let lateRefresh = try await walk.refresh(client, try XCTUnwrap(refreshed.json["refresh_token"] as? String))
            XCTAssertEqual(lateRefresh.status, .ok, "Refresh at 11 minutes: \(lateRefresh.body)")
            let lateToken = try XCTUnwrap(lateRefresh.json["access_token"] as? String)
            let second = try await walk.enroll(client, token: lateToken, name: "Ada's laptop")
            let deleted = try await H.call(client, .delete, "/connect/passkey/\(try XCTUnwrap(enrolled.id))", "", headers: SeedWalk.bearer(narrowed))
            if stepUp {
                SeedWalk.assertStepUpChallenge(second.reply, step: "Step-up: enroll at 11 minutes")
                SeedWalk.assertStepUpChallenge(deleted, step: "Step-up: delete at 11 minutes")
                // The recovery: sign in again (never a refresh), then the same calls succeed.
                harness.clock.advance(EmailSignInService.resendCooldown + 1)
                let again = try await walk.signInWithCode(client, email, number: 2, step: "Step-up: sign in again")
                let fresh = try XCTUnwrap(again.json["access_token"] as? String)
                let retried = try await walk.enroll(client, token: fresh, name: "Ada's laptop")
                XCTAssertEqual(retried.reply.status, .ok, "Step-up: enroll after signing in again: \(retried.reply.body)")
                let gone = try await H.call(client, .delete, "/connect/passkey/\(try XCTUnwrap(enrolled.id))", "", headers: SeedWalk.bearer(fresh))
                XCTAssertEqual(gone.status, .noContent, "Step-up: delete after signing in again: \(gone.body)")
            } else {
                XCTAssertEqual(second.reply.status, .ok, "Add a passkey 11 minutes into a session, with a refreshed token: \(second.reply.body)")
                XCTAssertEqual(deleted.status, .noContent, "Revoke one passkey with the token from Flow 1, 11 minutes later: \(deleted.body)")
            }
            // "A deleted passkey can no longer satisfy a urn:cocoar:passkey assertion."
            let begun = try await H.call(client, .post, "/connect/passkey/begin", SeedWalk.form([("client_id", SeedWalk.clientID)]), headers: H.form)
            let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap((begun.json["options"] as? [String: Any])?["challenge"] as? String)))
            let stale = walk.authenticator.assert(&credential, .init(challenge: challenge, origin: SeedWalk.origin))
            let refused = try await H.call(
                client, .post, "/connect/token",
                SeedWalk.form([
                    ("grant_type", "urn:cocoar:passkey"), ("client_id", SeedWalk.clientID), ("ceremony_id", try XCTUnwrap(begun.json["ceremonyId"] as? String)),
                    ("assertion", String(decoding: stale.json, as: UTF8.self)), ("scope", "openid"),
                ]), headers: H.form)
            XCTAssertEqual(refused.json["error"] as? String, "invalid_grant", "Manage: a deleted passkey signs in no more: \(refused.body)")

            // Discovery advertises the custom grants.
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let grants = discovery.json["grant_types_supported"] as? [String] ?? []
            XCTAssertTrue(Set(["urn:cocoar:otp", "urn:cocoar:magic", "urn:cocoar:passkey"]).isSubset(of: grants), "Discovery: \(grants)")
        }
    }
}
