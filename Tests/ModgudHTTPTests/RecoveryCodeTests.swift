import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import PQ
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 46, item 3: recovery codes over a real socket. Ten codes shown once and stored as
/// slow hashes; one code gives a session that can only enroll a passkey and list or end
/// sessions; each code works once (decided by the database); regenerating or an operator's
/// revocation ends the old set; erasure removes them; attempts are limited per address alike.
final class RecoveryCodeTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// The iOS harness with the recovery-code grant allowed to `ios`.
    static func recoveryHarness(_ more: (inout RealmSettings) -> Void = { _ in }) async throws -> EmailSignInHarness {
        let harness = try await PasskeyUpgradeTests.iosHarness(more)
        _ = try await harness.core.administration.clients.update(realm: "dev", id: "ios", metadata: .init()) { $0.grants.insert(.recoveryCode) }
        return harness
    }

    /// Signs `email` in by code (a full session with a refresh token).
    static func signIn(_ client: some TestClientProtocol, _ harness: EmailSignInHarness, _ email: String, number: Int = 1) async throws -> [String: Any] {
        _ = try await H.requestCode(client, email)
        let reply = try await H.redeemCode(client, email, try await harness.code(for: email, number: number), clientID: "ios")
        XCTAssertEqual(reply.status, .ok, reply.body)
        return reply.json
    }

    static func redeem(_ client: some TestClientProtocol, _ email: String, _ code: String) async throws -> H.Reply {
        try await H.token(
            client, [("grant_type", "urn:modgud:recovery-code"), ("client_id", "ios"), ("username", email), ("recovery_code", code)])
    }

    static func generate(_ client: some TestClientProtocol, token: String) async throws -> [String] {
        let reply = try await H.call(client, .post, "/connect/recovery-codes", "", headers: PasskeySteps.bearer(token))
        XCTAssertEqual(reply.status, .created, reply.body)
        XCTAssertEqual(reply.headers[.cacheControl], "no-store")
        return try XCTUnwrap(reply.json["codes"] as? [String])
    }

    static func count(_ harness: EmailSignInHarness, _ sql: String) async throws -> Int? {
        try await harness.core.pool.query(PQQuery(sql)).rows.first?.decode(Int.self, at: 0)
    }

    static func array(_ reply: H.Reply) throws -> [[String: Any]] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [[String: Any]], reply.body)
    }

    func testARecoveryCodeGivesASessionThatCanOnlyEnrollAPasskeyAndManageSessions() async throws {
        // More attempts than the default burst (the limit has its own test).
        harness = try await Self.recoveryHarness {
            $0.rateLimitOverrides[RateLimitPolicy.recoveryPerMailbox.name] = RateLimitSetting(limit: 100, windowSeconds: 3600, burst: 100)
        }
        let harness = harness!
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.live) { client in
            let first = try await Self.signIn(client, harness, "ada@example.com")
            let full = try XCTUnwrap(first["access_token"] as? String)
            let codes = try await Self.generate(client, token: full)
            XCTAssertEqual(codes.count, 10)
            XCTAssertEqual(Set(codes).count, 10)
            for code in codes { XCTAssertNotNil(code.range(of: #"^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$"#, options: .regularExpression), code) }
            let status = try await H.call(client, .get, "/connect/recovery-codes", "", headers: PasskeySteps.bearer(full))
            XCTAssertEqual(status.json["remaining"] as? Int, 10, status.body)

            // Never a code in the log or the table: the events name the set, the table holds
            // PBKDF2 hashes under the set's salt.
            let logged = try await harness.core.pool.query("SELECT string_agg(payload::text, ' ') FROM events WHERE type LIKE 'user.recovery%'")
            let payloads = try XCTUnwrap(try logged.rows.first?.decode(String?.self, at: 0))
            XCTAssertTrue(payloads.lowercased().contains(try XCTUnwrap(status.json["setId"] as? String)), payloads)
            let stored = try await harness.core.pool.query("SELECT code_hash FROM recovery_codes").rows.map { try $0.decode(String.self, at: 0) }
            XCTAssertEqual(stored.count, 10)
            for code in codes {
                let bare = code.replacingOccurrences(of: "-", with: "")
                XCTAssertFalse(payloads.contains(code) || payloads.contains(bare), "a code in the log")
                XCTAssertFalse(stored.contains { $0.contains(bare) || $0 == code }, "a code in the table")
            }

            // Wrong codes, malformed ones and unknown addresses all answer alike.
            let wrong = try await Self.redeem(client, "ada@example.com", "00000-00000")
            let malformed = try await Self.redeem(client, "ada@example.com", "not a code")
            let unknown = try await Self.redeem(client, "nobody@example.com", codes[0])
            for reply in [wrong, malformed, unknown] {
                XCTAssertEqual(reply.status, .badRequest, reply.body)
                XCTAssertEqual(reply.json["error"] as? String, "invalid_grant")
                XCTAssertEqual(reply.json["error_description"] as? String, "Invalid recovery code.")
            }

            // The code as a person retypes it: lower case, no hyphen, O for 0 and I or L for 1.
            let typed = codes[0].lowercased().replacingOccurrences(of: "-", with: "").replacingOccurrences(of: "0", with: "o")
                .replacingOccurrences(of: "1", with: "l")
            let recovered = try await Self.redeem(client, "ada@example.com", typed)
            XCTAssertEqual(recovered.status, .ok, recovered.body)
            XCTAssertEqual(recovered.json["scope"] as? String, "urn:modgud:recovery")
            XCTAssertNil(recovered.json["refresh_token"], "a recovery session does not last")
            XCTAssertNil(recovered.json["id_token"])
            XCTAssertLessThanOrEqual(try XCTUnwrap(recovered.json["expires_in"] as? Int), 900)
            let recovery = try XCTUnwrap(recovered.json["access_token"] as? String)
            let introspected = try await SignInClaimsTests.introspect(client, harness, recovery)
            XCTAssertEqual(introspected["acr"] as? String, "urn:modgud:acr:recovery")
            XCTAssertEqual(introspected["amr"] as? [String], ["otp"])

            // It reads nothing and changes nothing but passkeys and sessions: RFC 9470's challenge.
            for (method, path) in [
                (HTTPRequest.Method.get, "/connect/userinfo"), (.get, "/connect/passkey"), (.get, "/connect/passkey/signals"), (.get, "/connect/recovery-codes"),
                (.post, "/connect/recovery-codes"), (.post, "/api/account/totp/enroll"),
            ] {
                let refused = try await H.call(client, method, path, "", headers: PasskeySteps.bearer(recovery))
                XCTAssertEqual(refused.status, .unauthorized, "\(path): \(refused.body)")
                let challenge = refused.headers[.wwwAuthenticate] ?? ""
                XCTAssertTrue(challenge.contains(#"error="insufficient_user_authentication""#), "\(path): \(challenge)")
                XCTAssertTrue(challenge.contains("acr_values=\"urn:modgud:acr:single-factor urn:modgud:acr:mfa\""), challenge)
            }

            // It lists the person's sessions and ends another one (a stolen phone's).
            let listed = try Self.array(try await H.call(client, .get, "/connect/sessions", "", headers: PasskeySteps.bearer(recovery)))
            XCTAssertEqual(listed.count, 2, "\(listed)")
            XCTAssertEqual(listed.filter { $0["current"] as? Bool == true }.count, 1)
            let other = try XCTUnwrap(listed.first { $0["current"] as? Bool == false }?["id"] as? String)
            let ended = try await H.call(client, .delete, "/connect/sessions/\(other)", "", headers: PasskeySteps.bearer(recovery))
            XCTAssertEqual(ended.status, .noContent, ended.body)
            let again = try await H.call(client, .delete, "/connect/sessions/\(other)", "", headers: PasskeySteps.bearer(recovery))
            XCTAssertEqual(again.status, .noContent, "ending an ended session of one's own is idempotent: \(again.body)")
            let foreign = try await H.call(client, .delete, "/connect/sessions/\(UUID().uuidString)", "", headers: PasskeySteps.bearer(recovery))
            XCTAssertEqual(foreign.status, .notFound, foreign.body)
            let dead = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(full))
            XCTAssertEqual(dead.status, .unauthorized, "the ended session's token stopped working")

            // It enrolls a passkey, which then signs in for real.
            var (credential, _) = try await steps.enroll(client, token: recovery, origin: "https://ios.acme.test")
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = SoftwareAuthenticator().assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
            let byPasskey = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
            XCTAssertEqual(byPasskey.status, .ok, byPasskey.body)
            let restored = try XCTUnwrap(byPasskey.json["access_token"] as? String)
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(restored))
            XCTAssertEqual(userinfo.status, .ok, userinfo.body)

            // Each code works once; nine are left.
            let reused = try await Self.redeem(client, "ada@example.com", codes[0])
            XCTAssertEqual(reused.json["error_description"] as? String, "Invalid recovery code.", reused.body)
            let left = try await H.call(client, .get, "/connect/recovery-codes", "", headers: PasskeySteps.bearer(restored))
            XCTAssertEqual(left.json["remaining"] as? Int, 9, left.body)

            // A new set ends the old one.
            let renewed = try await Self.generate(client, token: restored)
            let old = try await Self.redeem(client, "ada@example.com", codes[1])
            XCTAssertEqual(old.json["error"] as? String, "invalid_grant", "the replaced set's codes stop working: \(old.body)")
            let rows = try await Self.count(harness, "SELECT count(*) FROM recovery_codes")
            XCTAssertEqual(rows, 10, "the replaced set's hashes are gone")
            let fresh = try await Self.redeem(client, "ada@example.com", renewed[3])
            XCTAssertEqual(fresh.status, .ok, fresh.body)

            // The operator sees how many are left and revokes them (the admin API).
            let found = try await harness.core.administration.users.find(realm: "dev", "ada@example.com")
            let userID = try XCTUnwrap(found)
            let admin = try await harness.core.administration.users.recoveryCodeStatus(realm: "dev", userID: userID)
            XCTAssertEqual(admin.remaining, 9)
            let revokedNow = try await harness.core.administration.users.revokeRecoveryCodes(realm: "dev", userID: userID, metadata: .init(actor: "admin:test"))
            XCTAssertTrue(revokedNow)
            let revoked = try await Self.redeem(client, "ada@example.com", renewed[4])
            XCTAssertEqual(revoked.json["error"] as? String, "invalid_grant", revoked.body)

            // Shared Signals: each change is a CAEP credential-change of type recovery-code.
            let facts = try await harness.core.store.readStream(StreamNames.user(realm: "dev", userID: userID).id, after: 0)
                .compactMap { try SignalCatalog.fact(for: $0.envelope) }.filter { $0.detail["credential_type"] == .string("recovery-code") }
            // Generated, a code used, replaced, a code of the new set used, revoked.
            XCTAssertEqual(facts.map(\.event), Array(repeating: .credentialChange, count: 5))
            XCTAssertEqual(
                facts.compactMap { if case .string(let change) = $0.detail["change_type"] { change } else { nil } },
                ["create", "update", "update", "update", "revoke"])

            // Erasure removes the hashes with the person.
            _ = try await harness.core.eraser.erase(realm: "dev", userID.uuidString, metadata: .init(actor: "admin:test"))
            let remaining = try await Self.count(harness, "SELECT count(*) FROM recovery_codes")
            XCTAssertEqual(remaining, 0)
        }
    }

    /// The Authorization Challenge Endpoint's step (issue 45's flow): `login_hint` and
    /// `recovery_code` in the first request answer an authorization code for a recovery session.
    func testARecoveryCodeIsAStepOfTheFirstPartyFlow() async throws {
        harness = try await Self.recoveryHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            let session = try await Self.signIn(client, harness, "ada@example.com")
            let codes = try await Self.generate(client, token: try XCTUnwrap(session["access_token"] as? String))
            func challenge(_ code: String) async throws -> H.Reply {
                try await AuthorizationChallengeTests.challenge(
                    client, [("client_id", "ios"), ("login_hint", "ada@example.com"), ("recovery_code", code),
                             ("code_challenge", AuthorizationChallengeTests.challenge), ("scope", "openid offline_access")])
            }
            let wrong = try await challenge("00000-00000")
            XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant", wrong.body)
            let answered = try await challenge(codes[2])
            XCTAssertEqual(answered.status, .ok, answered.body)
            let tokens = try await AuthorizationChallengeTests.redeem(
                client, code: try XCTUnwrap(answered.json["authorization_code"] as? String), clientID: "ios")
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            XCTAssertEqual(tokens.json["scope"] as? String, "urn:modgud:recovery")
            XCTAssertNil(tokens.json["refresh_token"])
            XCTAssertNil(tokens.json["auth_session"], "a recovery session is not stepped up: it enrolls a passkey")
            let refused = try await H.call(
                client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(try XCTUnwrap(tokens.json["access_token"] as? String)))
            XCTAssertEqual(refused.status, .unauthorized)
            let again = try await challenge(codes[2])
            XCTAssertEqual(again.json["error"] as? String, "invalid_grant", "each code once, whichever way it came")
        }
    }

    func testTwoRedemptionsOfOneCodeRaceAndTheDatabaseLetsExactlyOneWin() async throws {
        harness = try await Self.recoveryHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            let session = try await Self.signIn(client, harness, "ada@example.com")
            let codes = try await Self.generate(client, token: try XCTUnwrap(session["access_token"] as? String))
            let code = codes[0]
            async let first = Self.redeem(client, "ada@example.com", code)
            async let second = Self.redeem(client, "ada@example.com", code)
            let replies = try await [first, second]
            XCTAssertEqual(replies.filter { $0.status == .ok }.count, 1, replies.map(\.body).joined(separator: "\n"))
            XCTAssertEqual(replies.filter { $0.json["error"] as? String == "invalid_grant" }.count, 1)
            let used = try await harness.core.pool.query("SELECT count(*) FROM recovery_codes WHERE used_at IS NOT NULL")
            XCTAssertEqual(try used.rows.first?.decode(Int.self, at: 0), 1)
            let families = try await harness.core.pool.query("SELECT count(*) FROM token_families WHERE scopes = '{urn:modgud:recovery}'")
            XCTAssertEqual(try families.rows.first?.decode(Int.self, at: 0), 1, "the loser wrote no session")
        }
    }

    func testAttemptsAreLimitedPerAddressAndAnUnknownAddressIsLimitedAlike() async throws {
        harness = try await Self.recoveryHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            let session = try await Self.signIn(client, harness, "ada@example.com")
            let codes = try await Self.generate(client, token: try XCTUnwrap(session["access_token"] as? String))
            for address in ["ada@example.com", "nobody@example.com"] {
                var statuses: [HTTPResponse.Status] = []
                for _ in 0..<6 { statuses.append(try await Self.redeem(client, address, "00000-00000").status) }
                XCTAssertEqual(statuses, Array(repeating: .badRequest, count: 5) + [.tooManyRequests], address)
            }
            let limited = try await Self.redeem(client, "ada@example.com", codes[0])
            XCTAssertEqual(limited.status, .tooManyRequests, "past the limit even a right code waits: \(limited.body)")
            XCTAssertNotNil(limited.headers[.retryAfter])
        }
    }
}
