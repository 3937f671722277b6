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

/// Issue 14, item 1: a passkey sign-up's address is unconfirmed until a code proves it, and
/// until then proof of the mailbox wins over the account.
final class ProofOfMailboxTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testTheOwnerWhoProvesTheMailboxRetiresASquattersAccount() async throws {
        let harness = try await PasskeySignUpTests.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.router) { client in
            // Mallory signs up with Ada's address and holds a session and a passkey.
            let begun = try await steps.begin(client, #"{"ClientId":"ios","Email":"ada@example.com","FirstName":"Mallory"}"#)
            let (malloryKey, attestation) = try steps.create(begun)
            let squatted = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
            XCTAssertEqual(squatted.status, .ok, squatted.body)
            let malloryAccess = try XCTUnwrap(squatted.json["access_token"] as? String)
            let malloryRefresh = try XCTUnwrap(squatted.json["refresh_token"] as? String)
            let malloryID = try XCTUnwrap(PasskeySignUpTests.idTokenClaims(squatted)["sub"] as? String)

            // Ada asks for a code: the unproven account does not hold the address against her,
            // so she gets a registration code.
            let asked = try await H.requestCode(client, "ada@example.com")
            XCTAssertEqual(asked.status, .ok)
            let mail = try await harness.mail(to: "ada@example.com")
            XCTAssertTrue((mail.text ?? "").contains("finish creating"), mail.text ?? "")
            let redeemed = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), clientID: "ios")
            XCTAssertEqual(redeemed.status, .ok, redeemed.body)
            let adaAccess = try XCTUnwrap(redeemed.json["access_token"] as? String)
            let adaID = try XCTUnwrap(PasskeySignUpTests.idTokenClaims(redeemed)["sub"] as? String)
            XCTAssertNotEqual(adaID, malloryID, "a clean account, not Mallory's")

            let adaInfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(adaAccess))
            XCTAssertEqual(adaInfo.json["email_verified"] as? Bool, true)
            XCTAssertNil(adaInfo.json["given_name"], "nothing of Mallory's profile")
            let adaPasskeys = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(adaAccess))
            XCTAssertEqual(adaPasskeys.body, "[]")

            // Mallory's account, session and passkey are gone, in the same transaction.
            let malloryInfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(malloryAccess))
            XCTAssertEqual(malloryInfo.status, .unauthorized)
            let refreshed = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", malloryRefresh)])
            XCTAssertEqual(refreshed.json["error"] as? String, "invalid_grant")
            let passkeyLogin = try await steps.signIn(client, malloryKey)
            XCTAssertEqual(passkeyLogin.json["error"] as? String, "invalid_grant")
            let statuses = try await harness.core.pool.query(
                "SELECT user_id::text, status FROM users ORDER BY status"
            ).rows.map { "\(try $0.decode(String.self, at: 0))=\(try $0.decode(String.self, at: 1))" }
            XCTAssertEqual(Set(statuses), ["\(adaID)=active", "\(malloryID)=deleted"])
            let value1 = try await harness.core.pool.query("SELECT count(*) FROM passkeys").first!.decode(Int.self, at: 0)
            XCTAssertEqual(value1, 0)
            let transactions = try await harness.core.pool.query(
                """
                SELECT count(DISTINCT tx_id::text) FROM events
                WHERE type IN ('user.deleted', 'passkey.deleted', 'challenge.consumed')
                   OR (type = 'user.registered' AND stream_id = \("user-" + adaID))
                """
            ).first!.decode(Int.self, at: 0)
            XCTAssertEqual(transactions, 1, "retirement, deletion, consumption and the new account commit together")
            let reason = try await harness.core.pool.query("SELECT payload->>'reason' FROM events WHERE type = 'user.deleted'").first!
                .decode(String.self, at: 0)
            XCTAssertEqual(reason, "mailbox_proven_by_another")
        }
    }

    func testConfirmingTheAddressKeepsTheAccount() async throws {
        let harness = try await PasskeySignUpTests.makeHarness()
        self.harness = harness
        let steps = SignUpSteps(harness: harness)
        try await harness.app.test(.router) { client in
            let begun = try await steps.begin(client, #"{"ClientId":"ios","Email":"grace@example.com"}"#)
            let (_, attestation) = try steps.create(begun)
            let signedUp = try await steps.redeem(client, ceremony: begun.ceremony, attestation: attestation)
            let access = try XCTUnwrap(signedUp.json["access_token"] as? String)
            let sub = try XCTUnwrap(PasskeySignUpTests.idTokenClaims(signedUp)["sub"] as? String)

            let unauthenticated = try await H.call(client, .post, "/api/account/email/confirm/request", "", headers: [:])
            XCTAssertEqual(unauthenticated.status, .unauthorized)
            let requested = try await H.call(client, .post, "/api/account/email/confirm/request", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual(requested.status, .accepted, requested.body)
            XCTAssertEqual(requested.json["EmailConfirmed"] as? Bool, false)
            let mail = try await harness.mail(to: "grace@example.com")
            XCTAssertTrue((mail.text ?? "").contains("confirm this address"), mail.text ?? "")
            let code = try await harness.code(for: "grace@example.com")
            let wrong = String(format: "%06d", (Int(code)! + 1) % 1_000_000)
            let refused = try await H.call(
                client, .post, "/api/account/email/confirm", #"{"Code":"\#(wrong)"}"#, headers: PasskeySteps.bearer(access, json: true))
            XCTAssertEqual(refused.status, .badRequest)
            XCTAssertEqual(refused.json["title"] as? String, "Email.InvalidCode")
            let confirmed = try await H.call(
                client, .post, "/api/account/email/confirm", #"{"Code":"\#(code)"}"#, headers: PasskeySteps.bearer(access, json: true))
            XCTAssertEqual(confirmed.status, .ok, confirmed.body)
            XCTAssertEqual(confirmed.json["EmailConfirmed"] as? Bool, true)
            let replayed = try await H.call(
                client, .post, "/api/account/email/confirm", #"{"Code":"\#(code)"}"#, headers: PasskeySteps.bearer(access, json: true))
            XCTAssertEqual(replayed.json["EmailConfirmed"] as? Bool, true, "confirming twice is harmless")
            let again = try await H.call(client, .post, "/api/account/email/confirm/request", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual(again.status, .ok)
            XCTAssertEqual(again.json["EmailConfirmed"] as? Bool, true)
            XCTAssertEqual(try harness.mails(to: "grace@example.com").count, 1, "nothing sent once confirmed")

            // A proven account is the address's: a code now signs into it.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, "grace@example.com")
            let mail2 = try await harness.mail(to: "grace@example.com", number: 2)
            XCTAssertTrue((mail2.text ?? "").contains("sign in to"), mail2.text ?? "")
            let login = try await H.redeemCode(client, "grace@example.com", try await harness.code(for: "grace@example.com", number: 2), clientID: "ios")
            XCTAssertEqual(login.status, .ok, login.body)
            XCTAssertEqual(try PasskeySignUpTests.idTokenClaims(login)["sub"] as? String, sub)
            let info = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual(info.json["email_verified"] as? Bool, true)
        }
    }
}
