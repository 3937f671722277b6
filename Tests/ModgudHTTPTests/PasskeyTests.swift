import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import ModgudDomain
import ModgudHTTP
import PQ
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 6 acceptance: passkey ceremonies, the urn:cocoar:passkey grant, enrollment, list and
/// delete, through HTTP on real PostgreSQL with the software authenticator.
final class PasskeyTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    let authenticator = SoftwareAuthenticator()

    override func tearDown() async throws {
        await harness?.close()
    }

    /// A realm with primary domain `acme.test` and three clients: `ios` (RP-ID
    /// `ios.acme.test`), `web` (no RP-ID: the realm's) and `android` (RP-ID `acme.test` plus an
    /// Android origin).
    func makeHarness(primaryDomain: String? = "acme.test") async throws -> (EmailSignInHarness, PasskeySteps) {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = primaryDomain })
        let admin = harness.core.administration
        let scopes: Set<String> = ["openid", "email", "offline_access"]
        for (id, rpID, android) in [
            ("ios", "ios.acme.test", Set<String>()), ("web", nil, []), ("android", "acme.test", ["android:apk-key-hash:c2lnbmF0dXJl"]),
        ] {
            _ = try await admin.clients.create(
                realm: "dev", id: id,
                settings: ClientSettings(
                    type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: scopes, rpID: rpID, androidOrigins: android),
                metadata: .init())
        }
        self.harness = harness
        return (harness, PasskeySteps(harness: harness))
    }

    // MARK: Tests

    func testTheSeedLifecycleEndToEnd() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, passkeyID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")

            let ceremony = try await steps.begin(client, clientID: "ios")
            XCTAssertEqual(ceremony.options["rpId"] as? String, "ios.acme.test")
            XCTAssertEqual(ceremony.options["userVerification"] as? String, "required")
            XCTAssertEqual((ceremony.options["allowCredentials"] as? [Any])?.count, 0, "usernameless")
            XCTAssertEqual(ceremony.options["timeout"] as? Int, 300_000)
            XCTAssertEqual(ceremony.challenge.count, 32)
            let assertion = authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test"))
            let tokens = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: steps.json(assertion))
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            XCTAssertNotNil(tokens.json["refresh_token"])
            let idToken = try XCTUnwrap(tokens.json["id_token"] as? String)
            let payload = try XCTUnwrap(Base64URL.decode(String(idToken.split(separator: ".")[1])))
            let claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
            XCTAssertEqual(claims["amr"] as? [String], ["hwk", "mfa"], "the passkey counts as MFA")

            let newToken = try XCTUnwrap(tokens.json["access_token"] as? String)
            let list = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(newToken))
            XCTAssertEqual(list.status, .ok)
            let passkeys = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(list.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(passkeys.count, 1)
            XCTAssertEqual(passkeys[0]["Id"] as? String, passkeyID)
            XCTAssertEqual(passkeys[0]["DisplayName"] as? String, "Ada's phone")
            XCTAssertNotNil(passkeys[0]["CreatedAt"] as? String)
            XCTAssertNotNil(passkeys[0]["LastUsedAt"] as? String, "used once")

            let deleted = try await H.call(client, .delete, "/connect/passkey/\(passkeyID)", "", headers: PasskeySteps.bearer(newToken))
            XCTAssertEqual(deleted.status, .noContent)
            let empty = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(newToken))
            XCTAssertEqual(empty.body, "[]", "current the moment deletion answered")
            let again = try await steps.begin(client, clientID: "ios")
            let after = try await steps.redeem(
                client, clientID: "ios", ceremony: again.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: again.challenge, origin: "https://ios.acme.test"))))
            XCTAssertEqual(after.json["error_description"] as? String, "Invalid or expired passkey assertion.", "a deleted passkey no longer signs in")
        }
    }

    func testFreshPasskeyNeverUsedOmitsLastUsedAtAndEnrollmentExcludesIt() async throws {
        let (harness, steps) = try await makeHarness()
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let list = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(token))
            XCTAssertFalse(list.body.contains("LastUsedAt"), list.body)
            let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            let options = try XCTUnwrap(begun.json["options"] as? [String: Any])
            let excluded = try XCTUnwrap(options["excludeCredentials"] as? [[String: Any]])
            XCTAssertEqual(excluded.map { $0["id"] as? String }, [Base64URL.encode(credential.id)])
            XCTAssertEqual(options["attestation"] as? String, "none")
            let selection = try XCTUnwrap(options["authenticatorSelection"] as? [String: Any])
            XCTAssertEqual(selection["residentKey"] as? String, "required")
            XCTAssertEqual(selection["userVerification"] as? String, "required")
            XCTAssertEqual((options["pubKeyCredParams"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int }, [-7, -8, -257])
        }
    }

    func testCeremonySingleUseExpiryAndClientBinding() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "android")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://acme.test")
            // Replay.
            let first = try await steps.begin(client, clientID: "android")
            let assertion = steps.json(authenticator.assert(&credential, .init(challenge: first.challenge, origin: "https://acme.test")))
            let firstStatus = try await steps.redeem(client, clientID: "android", ceremony: first.id, assertion: assertion).status
            XCTAssertEqual(firstStatus, .ok)
            let replay = try await steps.redeem(client, clientID: "android", ceremony: first.id, assertion: assertion)
            XCTAssertEqual(replay.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            // Expiry.
            let late = try await steps.begin(client, clientID: "android")
            harness.clock.advance(301)
            let expired = try await steps.redeem(
                client, clientID: "android", ceremony: late.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: late.challenge, origin: "https://acme.test"))))
            XCTAssertEqual(expired.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            // Begun for android, redeemed by web (same RP-ID: only the binding differs).
            let bound = try await steps.begin(client, clientID: "android")
            let other = try await steps.redeem(
                client, clientID: "web", ceremony: bound.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: bound.challenge, origin: "https://acme.test"))))
            XCTAssertEqual(other.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            // Unknown and malformed ceremony ids.
            let unknown = try await steps.redeem(client, clientID: "android", ceremony: UUID().uuidString, assertion: assertion)
            XCTAssertEqual(unknown.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let garbage = try await steps.redeem(client, clientID: "android", ceremony: "nope", assertion: assertion)
            XCTAssertEqual(garbage.json["error_description"] as? String, "Invalid or expired passkey assertion.")
        }
    }

    /// The passkey grant sends its count and its proof's jti claim with the credential's lookup
    /// (issue 49), before the ceremony is consumed: a replayed proof is refused and the
    /// ceremony still signs in with a fresh one; and every refusal is counted once.
    func testTheGrantsChecksRideWithTheLookupAndSpendNothingWhenRefused() async throws {
        let (harness, steps) = try await makeHarness()
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
            $0.rateLimitOverrides["token.client"] = RateLimitSetting(limit: 60, windowSeconds: 60, burst: 100)
        }
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "android")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://acme.test")
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let endpoint = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let made = try DPoPProofMaker.make([["key": 1], ["key": 1]], htu: endpoint, iat: Int(harness.clock.now().timeIntervalSince1970))
            func redeem(_ ceremony: String, _ assertion: String, proof: String) async throws -> H.Reply {
                try await H.token(
                    client, [("grant_type", "urn:cocoar:passkey"), ("client_id", "android"), ("ceremony_id", ceremony), ("assertion", assertion)],
                    headers: DPoPTokenTests.headers(proof))
            }
            let first = try await steps.begin(client, clientID: "android")
            let signedIn = try await redeem(
                first.id, steps.json(authenticator.assert(&credential, .init(challenge: first.challenge, origin: "https://acme.test"))), proof: made[0].proof)
            XCTAssertEqual(signedIn.json["token_type"] as? String, "DPoP", signedIn.body)
            let second = try await steps.begin(client, clientID: "android")
            let assertion = steps.json(authenticator.assert(&credential, .init(challenge: second.challenge, origin: "https://acme.test")))
            let replayed = try await redeem(second.id, assertion, proof: made[0].proof)
            XCTAssertEqual(replayed.json["error"] as? String, "invalid_dpop_proof", replayed.body)
            let fresh = try await redeem(second.id, assertion, proof: made[1].proof)
            XCTAssertEqual(fresh.json["token_type"] as? String, "DPoP", "the replay did not consume the ceremony: \(fresh.body)")

            // Every refusal counts once against the client: one second of debt each.
            let before = try await Self.clientDebt(harness)
            let passkey: [(String, String)] = [("grant_type", "urn:cocoar:passkey"), ("client_id", "android")]
            for fields in [
                passkey + [("ceremony_id", second.id)],  // neither assertion nor attestation
                passkey + [("ceremony_id", "nope"), ("assertion", assertion)],
                passkey + [("ceremony_id", UUID().uuidString), ("assertion", "{")],  // no credential id: counted alone
                passkey + [("ceremony_id", UUID().uuidString), ("assertion", assertion)],  // counted with the lookup
                passkey + [("ceremony_id", second.id), ("assertion", assertion), ("scope", "admin")],
            ] {
                let reply = try await H.token(client, fields)
                XCTAssertEqual(reply.status, .badRequest, reply.body)
            }
            let after = try await Self.clientDebt(harness)
            XCTAssertEqual(after - before, 5, accuracy: 0.5, "each of the 5 refusals was counted once")
        }
    }

    /// A warm passkey sign-in is two round trips and one commit (issue 49): the credential's
    /// lookup with the request's count, then one append that consumes the ceremony, records
    /// the use and starts the token family. The ceremony stays single use: the same assertion
    /// again is refused, and so is an assertion of a ceremony another request spent.
    func testAWarmPasskeySignInIsTwoRoundTripsAndOneCommit() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "android")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://acme.test")
            func signIn() async throws -> (ceremony: String, assertion: String, reply: H.Reply) {
                let begun = try await steps.begin(client, clientID: "android")
                let assertion = steps.json(authenticator.assert(&credential, .init(challenge: begun.challenge, origin: "https://acme.test")))
                return (begun.id, assertion, try await steps.redeem(client, clientID: "android", ceremony: begun.id, assertion: assertion))
            }
            let warm = try await signIn()
            XCTAssertEqual(warm.reply.status, .ok, warm.reply.body)
            await harness.stopDispatcher()  // its outbox polls would count too
            let begun = try await steps.begin(client, clientID: "android")
            let assertion = steps.json(authenticator.assert(&credential, .init(challenge: begun.challenge, origin: "https://acme.test")))
            await harness.core.store.notificationsSent()
            let commitsBefore = try await Self.commits(harness)
            let before = PQRoundTrips.total
            let reply = try await steps.redeem(client, clientID: "android", ceremony: begun.id, assertion: assertion)
            await harness.core.store.notificationsSent()
            let (after, commitsAfter) = (PQRoundTrips.total, try await Self.commits(harness))
            XCTAssertEqual(reply.status, .ok, reply.body)
            // 1: the lookup with the count; 1: the append; 1: the NOTIFY after the commit.
            XCTAssertEqual(after - before, 3)
            XCTAssertEqual(commitsAfter - commitsBefore, 1, "the ceremony, the use and the family in one transaction")
            let again = try await steps.redeem(client, clientID: "android", ceremony: begun.id, assertion: assertion)
            XCTAssertEqual(again.json["error_description"] as? String, "Invalid or expired passkey assertion.", "single use")
        }
    }

    /// The single commit across two instances on one database (issue 49): a ceremony begun on
    /// A is redeemed on B, which has never seen it (it reads it); the same ceremony again on
    /// A, whose cache still holds it live, is refused by the append's expected version; and a
    /// ceremony begun on B and spent on A is refused on B.
    func testASignInOnEitherInstanceSpendsTheCeremonyForBoth() async throws {
        let (harness, steps) = try await makeHarness()
        let second = try ModgudCore(pool: harness.database.makePool(maxConnections: 10), masterKey: H.masterKey, now: { harness.clock.now() })
        let authenticator = self.authenticator
        try await harness.app.test(.router) { onA in
            try await buildApplication(core: second, configuration: harness.configuration).test(.router) { onB in
                let token = try await steps.signInWithCode(onA, "ada@example.com", clientID: "android")
                var (credential, _) = try await steps.enroll(onA, token: token, origin: "https://acme.test")
                func assertion(_ challenge: [UInt8]) -> String {
                    steps.json(authenticator.assert(&credential, .init(challenge: challenge, origin: "https://acme.test")))
                }
                let begunOnA = try await steps.begin(onA, clientID: "android")
                let signedA = assertion(begunOnA.challenge)
                let onBReply = try await steps.redeem(onB, clientID: "android", ceremony: begunOnA.id, assertion: signedA)
                XCTAssertEqual(onBReply.status, .ok, onBReply.body)
                let againOnA = try await steps.redeem(onA, clientID: "android", ceremony: begunOnA.id, assertion: signedA)
                XCTAssertEqual(againOnA.json["error_description"] as? String, "Invalid or expired passkey assertion.", "spent on B")
                let begunOnB = try await steps.begin(onB, clientID: "android")
                let signedB = assertion(begunOnB.challenge)
                let onAReply = try await steps.redeem(onA, clientID: "android", ceremony: begunOnB.id, assertion: signedB)
                XCTAssertEqual(onAReply.status, .ok, onAReply.body)
                let againOnB = try await steps.redeem(onB, clientID: "android", ceremony: begunOnB.id, assertion: signedB)
                XCTAssertEqual(againOnB.json["error_description"] as? String, "Invalid or expired passkey assertion.", "spent on A")
            }
        }
        let used = try await harness.core.pool.query("SELECT count(*)::int8 FROM events WHERE type = 'passkey.used'").first?.decode(Int64.self, at: 0)
        XCTAssertEqual(used, 2, "two sign-ins, one use each; the refused ones recorded none")
        await second.pool.close()
    }

    /// Transactions that wrote events (distinct `tx_id`s in the log).
    static func commits(_ harness: EmailSignInHarness) async throws -> Int64 {
        try await harness.core.pool.query("SELECT count(DISTINCT tx_id)::int8 FROM events").first?.decode(Int64.self, at: 0) ?? 0
    }

    /// Seconds of debt in the `android` client's token bucket (one request a second).
    static func clientDebt(_ harness: EmailSignInHarness) async throws -> Double {
        let tat = try await harness.core.pool.query("SELECT extract(epoch FROM tat)::float8 FROM rate_limits WHERE policy = 'token.client'")
        return try XCTUnwrap(tat.first?.decode(Double.self, at: 0)) - harness.clock.now().timeIntervalSince1970
    }

    func testTwentyConcurrentRedeemsOfOneCeremonyOneSuccess() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = steps.json(authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test")))
            let ceremonyID = ceremony.id
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        Int(
                            try await H.token(
                                client,
                                [("grant_type", "urn:cocoar:passkey"), ("client_id", "ios"), ("ceremony_id", ceremonyID), ("assertion", assertion)]
                            ).status.code)
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            XCTAssertEqual(statuses.filter { $0 == 200 }.count, 1, "\(statuses)")
            XCTAssertEqual(statuses.filter { $0 == 400 }.count, 19)
        }
    }

    func testACredentialVerifiesOnlyUnderItsOwnRPID() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, passkeyID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            // web's RP-ID is the realm's primary domain.
            let web = try await steps.begin(client, clientID: "web")
            XCTAssertEqual(web.options["rpId"] as? String, "acme.test", "blank RP-ID falls back to the realm's primary domain")
            let before = try await steps.passkeyState(passkeyID).signCount
            for origin in ["https://ios.acme.test", "https://acme.test"] {
                let attempt = try await steps.begin(client, clientID: "web")
                let reply = try await steps.redeem(
                    client, clientID: "web", ceremony: attempt.id,
                    assertion: steps.json(authenticator.assert(&credential, .init(challenge: attempt.challenge, origin: origin))))
                XCTAssertEqual(reply.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            }
            let after = try await steps.passkeyState(passkeyID).signCount
            XCTAssertEqual(after, before, "a refused assertion changes nothing")
            // ... but the log: each refusal is a failure of Ada's history (issue 43).
            let ada = try await harness.core.administration.users.find(realm: "dev", "ada@example.com")
            let audit = try await harness.core.administration.audit.userHistory(realm: "dev", userID: try XCTUnwrap(ada))
            XCTAssertEqual(audit.filter { $0.event == PasskeyAssertionFailed.eventType }.map(\.detail), ["reason=rp_id_mismatch", "reason=rp_id_mismatch"])
            // Anonymous begin: the realm's RP-ID, bound to no client.
            let anonymous = try await steps.begin(client, clientID: nil)
            XCTAssertEqual(anonymous.options["rpId"] as? String, "acme.test")
        }
    }

    func testNoRPIDAnywhereIs503() async throws {
        let (harness, _) = try await makeHarness(primaryDomain: nil)
        try await harness.app.test(.router) { client in
            let reply = try await H.call(client, .post, "/connect/passkey/begin", "client_id=web", headers: H.form)
            XCTAssertEqual(reply.status, .serviceUnavailable)
            XCTAssertEqual(reply.json["title"] as? String, "Passkey.Unavailable")
            let ios = try await H.call(client, .post, "/connect/passkey/begin", "client_id=ios", headers: H.form)
            XCTAssertEqual(ios.status, .ok, "a client with its own RP-ID does not need the realm's")
            let unknown = try await H.call(client, .post, "/connect/passkey/begin", "client_id=ghost", headers: H.form)
            XCTAssertEqual(unknown.status, .badRequest)
        }
    }

    func testAndroidOriginsOnlyWhenListedForThatClientAndRPID() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        let android = "android:apk-key-hash:c2lnbmF0dXJl"
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "android")
            var (credential, _) = try await steps.enroll(client, token: token, origin: android)
            let listed = try await steps.begin(client, clientID: "android")
            let ok = try await steps.redeem(
                client, clientID: "android", ceremony: listed.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: listed.challenge, origin: android))))
            XCTAssertEqual(ok.status, .ok, ok.body)
            // web shares the RP-ID but lists no Android origin.
            let unlisted = try await steps.begin(client, clientID: "web")
            let refused = try await steps.redeem(
                client, clientID: "web", ceremony: unlisted.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: unlisted.challenge, origin: android))))
            XCTAssertEqual(refused.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let other = try await steps.begin(client, clientID: "android")
            let wrongApp = try await steps.redeem(
                client, clientID: "android", ceremony: other.id,
                assertion: steps.json(authenticator.assert(&credential, .init(challenge: other.challenge, origin: "android:apk-key-hash:b3RoZXI"))))
            XCTAssertEqual(wrongApp.json["error_description"] as? String, "Invalid or expired passkey assertion.")
        }
    }

    func testSignCountRegressionIsRejectedAndRecordedAndUVIsRequired() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, passkeyID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            var options = SoftwareAuthenticator.AssertionOptions(challenge: [], origin: "https://ios.acme.test")
            let first = try await steps.begin(client, clientID: "ios")
            options.challenge = first.challenge
            options.signCount = 10
            let countedStatus = try await steps.redeem(client, clientID: "ios", ceremony: first.id, assertion: steps.json(authenticator.assert(&credential, options))).status
            XCTAssertEqual(countedStatus, .ok)
            let cloned = try await steps.begin(client, clientID: "ios")
            options.challenge = cloned.challenge
            options.signCount = 5
            let refused = try await steps.redeem(client, clientID: "ios", ceremony: cloned.id, assertion: steps.json(authenticator.assert(&credential, options)))
            XCTAssertEqual(refused.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let clones = try await harness.core.pool.query("SELECT count(*) FROM events WHERE type = 'passkey.clone_suspected'").first!.decode(Int.self, at: 0)
            XCTAssertEqual(clones, 1, "recorded as a possible clone")
            let ada = try await harness.core.administration.users.find(realm: "dev", "ada@example.com")
            let audit = try await harness.core.administration.audit.userHistory(realm: "dev", userID: try XCTUnwrap(ada))
            let clone = try XCTUnwrap(audit.first { $0.event == "passkey.clone_suspected" }, "the operator sees it in the audit")
            XCTAssertEqual(clone.detail, "sign_count stored=10 received=5")
            XCTAssertTrue(audit.contains { $0.event == "passkey.enrolled" })
            let storedCount = try await steps.passkeyState(passkeyID).signCount
            XCTAssertEqual(storedCount, 10)
            // User verification absent.
            let noUV = try await steps.begin(client, clientID: "ios")
            options.challenge = noUV.challenge
            options.signCount = 20
            options.flags = [.userPresent]
            let uv = try await steps.redeem(client, clientID: "ios", ceremony: noUV.id, assertion: steps.json(authenticator.assert(&credential, options)))
            XCTAssertEqual(uv.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            let failures = try await harness.core.administration.audit.signInFailures(realm: "dev", since: Date().addingTimeInterval(-3600))
            XCTAssertEqual(failures.map(\.kind), [.passkeyRefused, .passkeyClone], "newest first")
            XCTAssertEqual(failures.first?.detail, "user_verification_required")
        }
    }

    func testMalformedAssertionsAreInvalidGrantNeverAServerError() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            var (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let good = authenticator.assert(&credential, .init(challenge: Array(repeating: 1, count: 32), origin: "https://ios.acme.test"))
            var badBase64 = good
            badBase64.response.signature = "!!!not base64!!!"
            var badCBOR = good
            badCBOR.response.authenticatorData = Base64URL.encode([0xff, 0x00, 0x13])
            var wrongID = good
            wrongID.rawId = Base64URL.encode(Array(repeating: 7, count: 32))
            wrongID.id = wrongID.rawId
            for assertion in ["{", "[]", #"{"id":1}"#, steps.json(badBase64), steps.json(badCBOR), steps.json(wrongID), String(repeating: "x", count: 10_000)] {
                let ceremony = try await steps.begin(client, clientID: "ios")
                let reply = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: assertion)
                XCTAssertEqual(reply.status, .badRequest, assertion.prefix(30) + "")
                XCTAssertEqual(reply.json["error"] as? String, "invalid_grant")
                XCTAssertEqual(reply.json["error_description"] as? String, "Invalid or expired passkey assertion.")
            }
            // An empty value is an omitted parameter (RFC 6749 section 3.2).
            for fields in [[("grant_type", "urn:cocoar:passkey"), ("client_id", "ios")], [("grant_type", "urn:cocoar:passkey"), ("client_id", "ios"), ("ceremony_id", "x"), ("assertion", "")]] {
                let missing = try await H.token(client, fields)
                XCTAssertEqual(missing.json["error"] as? String, "invalid_request")
            }
        }
    }

    func testEnrollmentErrors() async throws {
        let (harness, steps) = try await makeHarness()
        let authenticator = self.authenticator
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let headers = PasskeySteps.bearer(token, json: true)
            let invalid = try await H.call(client, .post, "/connect/passkey/enroll", #"{"ceremonyId":"#, headers: headers)
            XCTAssertEqual(invalid.status, .badRequest)
            XCTAssertEqual(invalid.json["detail"] as? String, "Invalid request.")
            let expired = try await H.call(client, .post, "/connect/passkey/enroll", #"{"ceremonyId":"\#(UUID())","attestation":{}}"#, headers: headers)
            XCTAssertEqual(expired.json["detail"] as? String, "The enrollment session expired.")
            let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            let ceremony = try XCTUnwrap(begun.json["ceremonyId"] as? String)
            let garbage = try await H.call(
                client, .post, "/connect/passkey/enroll", #"{"ceremonyId":"\#(ceremony)","attestation":{"id":"x"}}"#, headers: headers)
            XCTAssertEqual(garbage.json["detail"] as? String, "Invalid attestation.")
            XCTAssertEqual(garbage.json["title"] as? String, "Passkey.InvalidAttestation")
            // Malformed CBOR in the attestation object, on a fresh ceremony.
            let cbor = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            let cborCeremony = try XCTUnwrap(cbor.json["ceremonyId"] as? String)
            let badObject = Base64URL.encode([0xa3, 0x63, 0x66, 0x6d, 0x74, 0xff])
            let badCBOR = try await H.call(
                client, .post, "/connect/passkey/enroll",
                #"{"ceremonyId":"\#(cborCeremony)","attestation":{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"\#(badObject)"}}}"#,
                headers: headers)
            XCTAssertEqual(badCBOR.status, .badRequest)
            XCTAssertEqual(badCBOR.json["detail"] as? String, "Invalid attestation.")
            // The ceremony was consumed by the failed attempt.
            let reused = try await H.call(
                client, .post, "/connect/passkey/enroll", #"{"ceremonyId":"\#(ceremony)","attestation":{}}"#, headers: headers)
            XCTAssertEqual(reused.json["detail"] as? String, "The enrollment session expired.")
            // The same credential twice.
            let (credential, _) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let second = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            let options = try XCTUnwrap(second.json["options"] as? [String: Any])
            let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
            let attestation = authenticator.register(credential, .init(challenge: challenge, origin: "https://ios.acme.test"))
            let duplicate = try await H.call(
                client, .post, "/connect/passkey/enroll",
                #"{"ceremonyId":"\#(try XCTUnwrap(second.json["ceremonyId"] as? String))","attestation":\#(String(decoding: attestation.json, as: UTF8.self))}"#,
                headers: headers)
            XCTAssertEqual(duplicate.status, .badRequest)
            XCTAssertEqual(duplicate.json["detail"] as? String, "This passkey is already registered.")
        }
    }
}

