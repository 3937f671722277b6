import Foundation
import HTTPTypes
import HummingbirdTesting
import ModgudClient
import MailTestSupport
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 48: a provider account joins an existing account only with proof of its mailbox (an
/// email code redeemed with the refusal's `link_session`), the person lists and unlinks it, and
/// Apple's server-to-server notifications end what an Apple account revoked. Over a live socket,
/// against the stand-in provider.
final class FederationLinkingTests: XCTestCase {
    typealias H = EmailSignInHarness
    typealias X = FederationExchangeTests
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    /// An Apple token with the owner's address is refused with a link session; the owner's
    /// email code with it links the Apple account in the code's transaction; Apple then signs
    /// the owner in. A session with another account's code, a forged one, and the same link
    /// twice are refused, and the code each time stays unspent. The person lists the link and
    /// unlinks it; an Apple sign-in is then refused again.
    func testALinkByEmailCodeThenTheListAndAnUnlink() async throws {
        let idp = try StandInProvider()
        harness = try await X.start(idp)
        let harness = self.harness!
        let owner = try await harness.registerUser("owner@example.com")
        _ = try await harness.registerUser("other@example.com")
        try await harness.app.test(.live) { client in
            let nonce = try await X.nonce(client)
            let token = try await idp.mint("apple", ["nonce": nonce.hash, "email": "owner@example.com", "sub": "000777.owner"])
            let before = try await harness.eventCount()
            let refused = try await X.exchange(client, token, nonce: nonce.nonce)
            XCTAssertEqual(refused.json["error"] as? String, "invalid_grant", refused.body)
            XCTAssertTrue((refused.json["error_description"] as? String ?? "").hasPrefix("link_requires_email_code:"), refused.body)
            XCTAssertEqual(refused.json["link_session_expires_in"] as? Int, 600)
            let session = try XCTUnwrap(refused.json["link_session"] as? String, refused.body)
            let afterRefusal = try await harness.eventCount()
            XCTAssertEqual(afterRefusal, before, "the refusal links and creates nothing")

            // Another account's code with the session: refused, and that code stays good.
            _ = try await H.requestCode(client, "other@example.com")
            let otherCode = try await harness.code(for: "other@example.com")
            let mismatched = try await H.redeemCode(client, "other@example.com", otherCode, extra: [("link_session", session)])
            XCTAssertEqual(mismatched.json["error"] as? String, "invalid_grant", mismatched.body)
            let otherSignIn = try await H.redeemCode(client, "other@example.com", otherCode)
            XCTAssertEqual(otherSignIn.status, .ok, "the code was not spent by the refusal: \(otherSignIn.body)")

            // A forged session: refused before the code is tried.
            _ = try await H.requestCode(client, "owner@example.com")
            let code = try await harness.code(for: "owner@example.com")
            var forged = Array(session)
            forged[forged.count / 2] = forged[forged.count / 2] == "A" ? "B" : "A"
            let tampered = try await H.redeemCode(client, "owner@example.com", code, extra: [("link_session", String(forged))])
            XCTAssertTrue((tampered.json["error_description"] as? String ?? "").contains("link_session"), tampered.body)

            // The owner's code with the session: signed in, and linked in the same transaction.
            let linked = try await H.redeemCode(client, "owner@example.com", code, extra: [("link_session", session)])
            XCTAssertEqual(linked.status, .ok, linked.body)
            XCTAssertEqual(try X.subject(linked), owner.uuidString.lowercased())
            let profile = try await harness.core.administration.users.profile(realm: "dev", userID: owner)
            XCTAssertEqual(profile.state.identities, ["apple"])
            let via = try await harness.core.pool.query(
                "SELECT payload->>'via' FROM events WHERE type = 'user.identity_linked' AND realm = 'dev'"
            ).first?.decode(String.self, at: 0)
            XCTAssertEqual(via, "email-code")

            // The same session again, with a fresh code: the link exists; the code stays unspent.
            _ = try await H.requestCode(client, "owner@example.com")
            let second = try await harness.code(for: "owner@example.com", number: 2)
            let twice = try await H.redeemCode(client, "owner@example.com", second, extra: [("link_session", session)])
            XCTAssertTrue((twice.json["error_description"] as? String ?? "").hasPrefix("account_linked:"), twice.body)
            let plain = try await H.redeemCode(client, "owner@example.com", second)
            XCTAssertEqual(plain.status, .ok, plain.body)

            // Apple now signs the owner in, without an address in the token.
            let again = try await X.nonce(client)
            let signedIn = try await X.exchange(client, try await idp.mint("apple", ["nonce": again.hash, "email": NSNull(), "sub": "000777.owner"]), nonce: again.nonce)
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            XCTAssertEqual(try X.subject(signedIn), owner.uuidString.lowercased())

            // The person's list, and an unlink (a fresh sign-in's token).
            let access = try XCTUnwrap(signedIn.json["access_token"] as? String)
            let listed = try await H.call(client, .get, "/connect/identities", "", headers: Self.bearer(access))
            XCTAssertEqual(listed.status, .ok, listed.body)
            let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(entries.map { $0["provider"] as? String }, ["apple"])
            XCTAssertEqual(entries.first?["kind"] as? String, "apple")
            XCTAssertNotNil(entries.first?["linkedAt"] as? String)
            let meWithAppToken = try await H.call(client, .get, "/me/v1/identities", "", headers: Self.bearer(access))
            // Issue 65: My Account's path wants its scope (the audience only with the realm's guard on).
            XCTAssertEqual(meWithAppToken.status, .forbidden, "My Account's path wants a My Account token's scope")
            let unlinked = try await H.call(client, .delete, "/connect/identities/apple", "", headers: Self.bearer(access))
            XCTAssertEqual(unlinked.status, .noContent, unlinked.body)
            let gone = try await H.call(client, .delete, "/connect/identities/apple", "", headers: Self.bearer(access))
            XCTAssertEqual(gone.status, .notFound, gone.body)
            let empty = try await H.call(client, .get, "/connect/identities", "", headers: Self.bearer(access))
            XCTAssertEqual(empty.body, "[]")
            let links = try await harness.core.pool.query("SELECT count(*) FROM federated_identities").first?.decode(Int.self, at: 0)
            XCTAssertEqual(links, 0)
            // Unlinked: the Apple account is a stranger to the owner's account again.
            let third = try await X.nonce(client)
            let stranger = try await X.exchange(
                client, try await idp.mint("apple", ["nonce": third.hash, "email": "owner@example.com", "sub": "000777.owner"]), nonce: third.nonce)
            XCTAssertTrue((stranger.json["error_description"] as? String ?? "").hasPrefix("link_requires_email_code:"), stranger.body)
        }
    }

    /// A person with TOTP: neither a linked sign-in nor a link by a verified address gets past
    /// the provider alone; with `totp_code` both do, and the step is spent once.
    func testTOTPIsAskedOfALinkedPersonAndOfALink() async throws {
        let idp = try StandInProvider()
        harness = try await X.start(idp)
        let harness = self.harness!
        let owner = try await harness.registerUser("totp@example.com")
        let totp = try await EmailSignInTests.turnOnTOTP(harness, user: owner)
        try await harness.app.test(.live) { client in
            func exchange(_ totpCode: String?) async throws -> H.Reply {
                let nonce = try await X.nonce(client)
                let token = try await idp.mint("google", ["nonce": nonce.hash, "email": "totp@example.com", "sub": "3333"])
                return try await X.exchange(client, token, nonce: nonce.nonce, extra: totpCode.map { [("totp_code", $0)] } ?? [])
            }
            let before = try await harness.eventCount()
            let missing = try await exchange(nil)
            XCTAssertEqual(missing.json["error_description"] as? String, SecondFactor.refusal.description, missing.body)
            let wrong = try await exchange(totp.wrong)
            XCTAssertEqual(wrong.json["error_description"] as? String, SecondFactor.refusal.description, wrong.body)
            let unchanged = try await harness.eventCount()
            XCTAssertEqual(unchanged, before, "no link without the second factor")
            let code = totp.current
            let linked = try await exchange(code)
            XCTAssertEqual(linked.status, .ok, linked.body)
            XCTAssertEqual(try X.subject(linked), owner.uuidString.lowercased())
            let replayed = try await exchange(code)
            XCTAssertEqual(replayed.json["error_description"] as? String, SecondFactor.refusal.description, "a TOTP step is good once")
            let signedIn = try await exchange(nil)
            XCTAssertEqual(signedIn.json["error_description"] as? String, SecondFactor.refusal.description, "linked, and still two factors")
        }
    }

    /// Apple's server-to-server notifications, as Apple posts them: `consent-revoked` unlinks
    /// the Apple account and ends the sessions it signed in (the person's email-code session
    /// stays); Apple's retry of it changes nothing; a mail event and an unknown account are
    /// acknowledged; forged, foreign and stale ones are refused with the check's name.
    func testAppleNotificationsEndWhatARevokedAppleAccountStarted() async throws {
        let idp = try StandInProvider()
        harness = try await X.start(idp)
        let harness = self.harness!
        try await harness.app.test(.live) { client in
            let nonce = try await X.nonce(client)
            let token = try await idp.mint("apple", ["nonce": nonce.hash, "email": "revoke@privaterelay.appleid.com", "sub": "000888.revoke"])
            let apple = try await X.exchange(client, token, nonce: nonce.nonce)
            XCTAssertEqual(apple.status, .ok, apple.body)
            let user = try XCTUnwrap(UUID(uuidString: try X.subject(apple)))
            _ = try await H.requestCode(client, "revoke@privaterelay.appleid.com")
            let code = try await harness.code(for: "revoke@privaterelay.appleid.com")
            let byMail = try await H.redeemCode(client, "revoke@privaterelay.appleid.com", code)
            XCTAssertEqual(byMail.status, .ok, byMail.body)

            func post(_ body: [String: Any]) async throws -> H.Reply {
                let payload = try await idp.appleNotification(body)
                return try await H.call(
                    client, .post, "/connect/federation/apple/notifications", H.jsonBody(["payload": payload]), headers: H.json)
            }
            func refused(_ body: [String: Any], _ reason: String, line: UInt = #line) async throws {
                let reply = try await post(body)
                XCTAssertEqual(reply.status, .badRequest, reply.body, line: line)
                XCTAssertTrue((reply.json["detail"] as? String ?? "").hasPrefix(reason + ":"), reply.body, line: line)
            }
            let before = try await harness.eventCount()
            try await refused(["type": "consent-revoked", "sub": "000888.revoke", "_key": "stranger"], "signature")
            try await refused(["type": "consent-revoked", "sub": "000888.revoke", "_aud": "com.someone.else"], "audience")
            try await refused(["type": "consent-revoked", "sub": "000888.revoke", "_iat": Int(Date().timeIntervalSince1970) - 3 * 86400], "expired")
            let malformed = try await H.call(client, .post, "/connect/federation/apple/notifications", #"{"payload": 7}"#, headers: H.json)
            XCTAssertEqual(malformed.status, .badRequest, malformed.body)
            let afterRefusals = try await harness.eventCount()
            XCTAssertEqual(afterRefusals, before, "a refused notification changes nothing")

            let mail = try await post(["type": "email-disabled", "sub": "000888.revoke", "email": "revoke@privaterelay.appleid.com"])
            XCTAssertEqual(mail.json["outcome"] as? String, "acknowledged", mail.body)
            let unknown = try await post(["type": "consent-revoked", "sub": "000999.nobody"])
            XCTAssertEqual(unknown.json["outcome"] as? String, "acknowledged", unknown.body)

            let payload = try await idp.appleNotification(["type": "consent-revoked", "sub": "000888.revoke"])
            let revoked = try await H.call(client, .post, "/connect/federation/apple/notifications", H.jsonBody(["payload": payload]), headers: H.json)
            XCTAssertEqual(revoked.status, .ok, revoked.body)
            XCTAssertEqual(revoked.json["outcome"] as? String, "unlinked", revoked.body)
            let retried = try await H.call(client, .post, "/connect/federation/apple/notifications", H.jsonBody(["payload": payload]), headers: H.json)
            XCTAssertEqual(retried.json["outcome"] as? String, "duplicate", retried.body)

            let profile = try await harness.core.administration.users.profile(realm: "dev", userID: user)
            XCTAssertEqual(profile.state.identities, [])
            let reason = try await harness.core.pool.query(
                "SELECT payload->>'reason' FROM events WHERE type = 'user.identity_unlinked' AND realm = 'dev'").first?.decode(String.self, at: 0)
            XCTAssertEqual(reason, "consent-revoked")
            // The Apple session is over; the email-code session goes on.
            let appleRefresh = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(apple.json["refresh_token"] as? String))])
            XCTAssertEqual(appleRefresh.json["error"] as? String, "invalid_grant", appleRefresh.body)
            let mailRefresh = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(byMail.json["refresh_token"] as? String))])
            XCTAssertEqual(mailRefresh.status, .ok, mailRefresh.body)
            let ended = try await harness.core.tokenService.tokens.sessions(realm: "dev", userID: user).compactMap(\.endedBecause)
            XCTAssertEqual(ended, ["provider_revoked"])
        }
    }

    /// The same flow through `ModgudClient`, over a live socket: the provider sign-in answers
    /// `.linkRequiresEmailCode`, the email code with its session links, the client lists the
    /// link and unlinks it.
    func testModgudClientLinksByEmailCodeListsAndUnlinks() async throws {
        let idp = try StandInProvider()
        harness = try await X.start(idp, issuerScheme: "http")
        let harness = self.harness!
        let owner = try await harness.registerUser("client-owner@example.com")
        try await harness.app.test(.live) { server in
            let issuer = URL(string: "http://localhost:\(try XCTUnwrap(server.port))")!
            let app = ModgudClient(configuration: ModgudClient.Configuration(issuer: issuer, clientID: "app", scope: "openid email offline_access"))
            let nonce = try await app.federationNonce()
            let token = try await idp.mint("google", ["nonce": nonce.hashed, "email": "client-owner@example.com", "email_verified": false, "sub": "4444"])
            var session: String?
            do {
                _ = try await app.signIn(withGoogleIDToken: token, nonce: nonce)
                XCTFail("an unverified address linked without an email code")
            } catch ModgudError.linkRequiresEmailCode(let linkSession) {
                session = linkSession
            }
            try await app.requestCode(email: "client-owner@example.com")
            let code = try await harness.code(for: "client-owner@example.com")
            _ = try await app.signIn(email: "client-owner@example.com", code: code, linkSession: try XCTUnwrap(session))
            let info = try await app.userInfo()
            XCTAssertEqual(info["sub"], .string(owner.uuidString.lowercased()))
            let linked = try await app.linkedIdentities()
            XCTAssertEqual(linked.map(\.provider), ["google"])
            XCTAssertEqual(linked.first?.kind, "google")
            try await app.unlinkIdentity(provider: "google")
            let after = try await app.linkedIdentities()
            XCTAssertEqual(after, [])
        }
    }
}
