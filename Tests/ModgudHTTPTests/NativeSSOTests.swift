import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudClient
import ModgudDomain
import WebAuthn
@testable import ModgudService
import XCTest

/// Issue 69, item 1: OpenID Connect Native SSO for Mobile Apps (draft 07) over a real socket.
/// App `app` signs in by email code with `device_sso` and gets a device secret; its teammate
/// `app2` exchanges the ID token and the secret for its own tokens with no new sign-in; a
/// client outside the team, a wrong secret, another session's ID token, a missing or wrong
/// `audience` are refused; signing out with the device secret ends both apps' sign-ins.
final class NativeSSOTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let scope = "openid email offline_access device_sso"

    /// A realm whose team `acme` is `app` and `app2`; `app2` and `outsider` (in no team) hold the
    /// token exchange grant; `solo` signs in by code, in no team.
    static func teamHarness(issuerScheme: String = "https") async throws -> EmailSignInHarness {
        let harness = try await EmailSignInHarness(
            settings: { $0.nativeSSOTeams = [NativeSSOTeam(name: "acme", clients: ["app", "app2"])] }, issuerScheme: issuerScheme)
        for id in ["app2", "outsider"] {
            _ = try await harness.core.administration.clients.create(
                realm: "dev", id: id,
                settings: ClientSettings(type: .public, grants: [.tokenExchange, .refreshToken], allowedScopes: ["openid", "email", "offline_access"]),
                metadata: .init())
        }
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "solo", settings: ClientSettings(type: .public, grants: [.otp, .refreshToken], allowedScopes: ["openid", "offline_access"]),
            metadata: .init())
        return harness
    }

    static func claims(_ jwt: String?) throws -> [String: Any] { try SignInClaimsTests.claims(try XCTUnwrap(jwt)) }

    /// Section 4.1's request, `extra` replacing or adding fields.
    static func exchange(_ client: some TestClientProtocol, clientID: String = "app2", idToken: String, secret: String, audience: String?,
        extra: [(String, String)] = [], headers: HTTPFields = H.form) async throws -> H.Reply
    {
        var fields = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"), ("client_id", clientID), ("subject_token", idToken),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"), ("actor_token", secret),
            ("actor_token_type", "urn:openid:params:token-type:device-secret"), ("scope", "openid email offline_access"),
        ]
        if let audience { fields.append(("audience", audience)) }
        for (name, value) in extra {
            fields.removeAll { $0.0 == name }
            fields.append((name, value))
        }
        return try await H.token(client, fields, headers: headers)
    }

    func testATeammateSignsInWithTheDeviceSecretAndSigningOutEndsEveryAppsSignIn() async throws {
        harness = try await Self.teamHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            // Discovery says so (section 5).
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertEqual(discovery.json["native_sso_supported"] as? Bool, true, discovery.body)
            XCTAssertTrue((discovery.json["scopes_supported"] as? [String] ?? []).contains("device_sso"), discovery.body)

            // Section 3: a sign-in with device_sso gets a device secret; its ID token names the
            // device session (sid) and the secret's hash (ds_hash).
            _ = try await H.requestCode(client, "ada@example.com")
            let first = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), scope: Self.scope)
            XCTAssertEqual(first.status, .ok, first.body)
            let secret = try XCTUnwrap(first.json["device_secret"] as? String, first.body)
            XCTAssertTrue((first.json["scope"] as? String ?? "").split(separator: " ").contains("device_sso"), first.body)
            let idToken = try XCTUnwrap(first.json["id_token"] as? String)
            let original = try Self.claims(idToken)
            let sid = try XCTUnwrap(original["sid"] as? String, "\(original)")
            XCTAssertEqual(original["ds_hash"] as? String, Base64URL.encode(Array(SHA256.hash(data: Array(secret.utf8)))))
            let issuer = try XCTUnwrap(original["iss"] as? String)
            let stored = try await harness.databaseText()
            XCTAssertFalse(stored.contains(secret), "the device secret is never stored")

            // Section 4: app2 exchanges them for its own tokens, no new sign-in.
            harness.clock.advance(60)
            let second = try await Self.exchange(client, idToken: idToken, secret: secret, audience: issuer)
            XCTAssertEqual(second.status, .ok, second.body)
            XCTAssertEqual(second.json["issued_token_type"] as? String, "urn:ietf:params:oauth:token-type:access_token")
            XCTAssertNil(second.json["device_secret"], "the device keeps the secret its apps share")
            let joined = try Self.claims(second.json["id_token"] as? String)
            XCTAssertEqual(joined["aud"] as? [String] ?? [joined["aud"] as? String ?? ""], ["app2"])
            XCTAssertEqual(joined["sub"] as? String, original["sub"] as? String)
            XCTAssertEqual(joined["sid"] as? String, sid)
            XCTAssertEqual(joined["ds_hash"] as? String, original["ds_hash"] as? String)
            XCTAssertEqual(joined["auth_time"] as? Int, original["auth_time"] as? Int, "the person signed in once")
            XCTAssertEqual(joined["amr"] as? [String], ["otp"])
            let app2Refresh = try XCTUnwrap(second.json["refresh_token"] as? String)

            // Drafts 05 and 06's token type still works, and an expired ID token is fine
            // (section 4.3: the device session's liveness counts, not the ID token's expiry).
            harness.clock.advance(3 * 3600)
            let legacy = try await Self.exchange(
                client, idToken: idToken, secret: secret, audience: issuer, extra: [("actor_token_type", "urn:x-oath:params:oauth:token-type:device-secret")])
            XCTAssertEqual(legacy.status, .ok, legacy.body)

            // Refusals, each before anything is issued.
            func refused(_ reply: H.Reply, _ error: String, _ reason: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
                XCTAssertEqual(reply.status, .badRequest, reply.body, file: file, line: line)
                XCTAssertEqual(reply.json["error"] as? String, error, reply.body, file: file, line: line)
                if let reason {
                    XCTAssertTrue((reply.json["error_description"] as? String ?? "").hasPrefix(reason + ":"), reply.body, file: file, line: line)
                }
            }
            refused(try await Self.exchange(client, clientID: "outsider", idToken: idToken, secret: secret, audience: issuer), "invalid_grant", "team")
            refused(try await Self.exchange(client, idToken: idToken, secret: OpaqueToken.generate().token, audience: issuer), "invalid_grant", "session")
            refused(try await Self.exchange(client, idToken: idToken, secret: secret, audience: nil), "invalid_request")
            refused(try await Self.exchange(client, idToken: idToken, secret: secret, audience: "https://elsewhere.example"), "invalid_target")
            refused(try await Self.exchange(client, idToken: idToken, secret: secret, audience: issuer, extra: [("scope", "email")]), "invalid_scope")
            var forged = idToken.split(separator: ".").map(String.init)
            forged[2] = String(forged[2].reversed())
            refused(try await Self.exchange(client, idToken: forged.joined(separator: "."), secret: secret, audience: issuer), "invalid_grant", "subject_token")
            // Another person's device session: its ID token with Ada's secret, and the other way.
            _ = try await H.requestCode(client, "bo@example.com")
            let bo = try await H.redeemCode(client, "bo@example.com", try await harness.code(for: "bo@example.com"), scope: Self.scope)
            let boToken = try XCTUnwrap(bo.json["id_token"] as? String, bo.body)
            refused(try await Self.exchange(client, idToken: boToken, secret: secret, audience: issuer), "invalid_grant", "subject_token")
            refused(
                try await Self.exchange(client, idToken: idToken, secret: try XCTUnwrap(bo.json["device_secret"] as? String), audience: issuer),
                "invalid_grant", "subject_token")
            // A client in no team asking for device_sso signs in without it (RFC 6749 section
            // 3.3: the response's scope says what was granted).
            _ = try await H.requestCode(client, "cy@example.com")
            let solo = try await H.redeemCode(client, "cy@example.com", try await harness.code(for: "cy@example.com"), clientID: "solo", scope: "openid device_sso")
            XCTAssertEqual(solo.status, .ok, solo.body)
            XCTAssertEqual(solo.json["scope"] as? String, "openid")
            XCTAssertNil(solo.json["device_secret"])
            XCTAssertNil(try Self.claims(solo.json["id_token"] as? String)["sid"], "no device session, no sid")

            // The joined sign-in refreshes, and its ID token stays in the session.
            let refreshed = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app2"), ("refresh_token", app2Refresh)])
            XCTAssertEqual(refreshed.status, .ok, refreshed.body)
            XCTAssertEqual(try Self.claims(refreshed.json["id_token"] as? String)["sid"] as? String, sid)

            // Signing out on the device (RFC 7009 with the device secret, by any app of the
            // team) ends every app's sign-in in the session, each a recorded revocation.
            let revokedBefore = try await harness.eventCount(type: TokenFamilyRevoked.eventType)
            let signOut = try await H.call(client, .post, "/connect/revoke", "client_id=app2&token=\(secret)", headers: H.form)
            XCTAssertEqual(signOut.status, .ok, signOut.body)
            let revokedAfter = try await harness.eventCount(type: TokenFamilyRevoked.eventType)
            XCTAssertEqual(revokedAfter - revokedBefore, 3, "app's sign-in and app2's two")
            let app1Refresh = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(first.json["refresh_token"] as? String))])
            XCTAssertEqual(app1Refresh.json["error"] as? String, "invalid_grant", app1Refresh.body)
            let app2After = try await H.token(
                client, [("grant_type", "refresh_token"), ("client_id", "app2"), ("refresh_token", try XCTUnwrap(refreshed.json["refresh_token"] as? String))])
            XCTAssertEqual(app2After.json["error"] as? String, "invalid_grant", app2After.body)
            refused(try await Self.exchange(client, idToken: idToken, secret: secret, audience: issuer), "invalid_grant", "session")
            // Bo's session is untouched.
            let boStill = try await Self.exchange(client, idToken: boToken, secret: try XCTUnwrap(bo.json["device_secret"] as? String), audience: issuer)
            XCTAssertEqual(boStill.status, .ok, boStill.body)
        }
    }

    func testADPoPBoundSessionNeedsItsKeyAndARacingSignOutLeavesNoSignInStanding() async throws {
        harness = try await Self.teamHarness()
        let harness = harness!
        try await harness.app.test(.live) { client in
            let tokenURL = "https://localhost/connect/token"
            let iat = Int(harness.clock.now().timeIntervalSince1970)
            let proofs = try DPoPProofMaker.make([["key": 1], ["key": 2]], htu: tokenURL, iat: iat)
            let more = try DPoPProofMaker.make([["key_pem": proofs[0].key]], htu: tokenURL, iat: iat)
            _ = try await H.requestCode(client, "ada@example.com")
            let first = try await H.redeemCode(
                client, "ada@example.com", try await harness.code(for: "ada@example.com"), scope: Self.scope, extra: [])
            XCTAssertEqual(first.status, .ok, first.body)
            // A sign-in with a DPoP proof binds the device session to its key.
            _ = try await H.requestCode(client, "bo@example.com")
            let bound = try await H.call(
                client, .post, "/connect/token",
                "grant_type=urn%3Acocoar%3Aotp&client_id=app&username=bo%40example.com&otp_code=\(try await harness.code(for: "bo@example.com"))&scope=openid%20offline_access%20device_sso",
                headers: DPoPTokenTests.headers(proofs[0].proof))
            XCTAssertEqual(bound.status, .ok, bound.body)
            let idToken = try XCTUnwrap(bound.json["id_token"] as? String)
            let secret = try XCTUnwrap(bound.json["device_secret"] as? String)
            let issuer = try XCTUnwrap(try Self.claims(idToken)["iss"] as? String)
            let bare = try await Self.exchange(client, idToken: idToken, secret: secret, audience: issuer)
            XCTAssertEqual(bare.json["error"] as? String, "invalid_dpop_proof", "the secret alone: \(bare.body)")
            let stranger = try await Self.exchange(
                client, idToken: idToken, secret: secret, audience: issuer, headers: DPoPTokenTests.headers(proofs[1].proof))
            XCTAssertEqual(stranger.json["error"] as? String, "invalid_dpop_proof", "another key: \(stranger.body)")
            let proven = try await Self.exchange(
                client, idToken: idToken, secret: secret, audience: issuer, headers: DPoPTokenTests.headers(more[0].proof))
            XCTAssertEqual(proven.status, .ok, proven.body)
            XCTAssertEqual(proven.json["token_type"] as? String, "DPoP")

            // Eight exchanges racing a sign-out: whichever of them were answered, none of their
            // sign-ins outlives it (a sign-out lists the session's families; an exchange that
            // wrote after that looks at the session again and ends its own).
            let adaToken = try XCTUnwrap(first.json["id_token"] as? String)
            let adaSecret = try XCTUnwrap(first.json["device_secret"] as? String)
            let answers = try await withThrowingTaskGroup(of: H.Reply?.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await Self.exchange(client, idToken: adaToken, secret: adaSecret, audience: issuer) }
                }
                group.addTask {
                    let signOut = try await H.call(client, .post, "/connect/revoke", "client_id=app&token=\(adaSecret)", headers: H.form)
                    XCTAssertEqual(signOut.status, .ok, signOut.body)
                    return nil
                }
                return try await group.reduce(into: [H.Reply]()) { if let reply = $1 { $0.append(reply) } }
            }
            XCTAssertEqual(answers.count, 8)
            for answer in answers {
                if answer.status == .ok {
                    let refresh = try await H.token(
                        client, [("grant_type", "refresh_token"), ("client_id", "app2"), ("refresh_token", try XCTUnwrap(answer.json["refresh_token"] as? String))])
                    XCTAssertEqual(refresh.json["error"] as? String, "invalid_grant", "a sign-in the race answered is ended too: \(refresh.body)")
                } else {
                    XCTAssertTrue((answer.json["error_description"] as? String ?? "").hasPrefix("session:"), answer.body)
                }
            }
            let live = try await harness.core.pool.query(
                "SELECT count(*) FROM token_families WHERE device_session = (SELECT family_id FROM token_families WHERE device_secret_hash = \(OpaqueToken.hash(adaSecret))) AND revoked_reason IS NULL"
            ).first!.decode(Int.self, at: 0)
            XCTAssertEqual(live, 0, "no sign-in of the ended session is live")
        }
    }

    /// `ModgudClient`'s Native SSO: app 1 signs in with `device_sso` and hands its
    /// `DeviceSession` over (here through a file, as a keychain access group would), app 2
    /// signs in with it, and app 2's sign-out of the device signs app 1 out too.
    func testModgudClientSharesTheSignInWithATeammateAndSignsTheDeviceOut() async throws {
        harness = try await Self.teamHarness(issuerScheme: "http")
        let harness = harness!
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modgud-native-sso-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let clock = harness.clock
            func app(_ id: String, scope: String) -> ModgudClient {
                ModgudClient(
                    configuration: .init(issuer: URL(string: "http://localhost:\(port)")!, clientID: id, scope: scope),
                    store: FileTokenStore(url: directory.appendingPathComponent("\(id).json")), now: { clock.now() })
            }
            let first = app("app", scope: "openid email offline_access device_sso")
            try await first.requestCode(email: "ada@example.com")
            let signedIn = try await first.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            XCTAssertNotNil(signedIn.deviceSecret)
            let deviceSession = try await first.deviceSession()
            let shared = try XCTUnwrap(deviceSession)
            let handedOver = try JSONDecoder().decode(ModgudClient.DeviceSession.self, from: try JSONEncoder().encode(shared))

            let second = app("app2", scope: "openid email offline_access")
            let joined = try await second.signIn(withDeviceSession: handedOver)
            XCTAssertEqual(joined.subject, signedIn.subject, "the same person, no new sign-in")
            XCTAssertEqual(joined.idTokenClaims?["sid"], signedIn.idTokenClaims?["sid"])
            let email = try await second.userInfo()["email"]?.string
            XCTAssertEqual(email, "ada@example.com")
            let passedOn = try await second.deviceSession()
            XCTAssertEqual(passedOn?.deviceSecret, shared.deviceSecret, "app 2 can pass the session on, with its own ID token of it")
            XCTAssertEqual(try Self.claims(passedOn?.idToken)["sid"] as? String, signedIn.idTokenClaims?["sid"]?.string)

            try await second.signOutOfDevice()
            let introspect = { (token: String) async throws -> Bool in
                var headers = H.form
                headers[.authorization] = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
                let reply = try await H.call(
                    server, .post, "/connect/introspect", "token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", headers: headers)
                return reply.json["active"] as? Bool ?? true
            }
            let firstActive = try await introspect(signedIn.accessToken)
            XCTAssertFalse(firstActive, "app 1 is signed out with the device")
            let secondActive = try await introspect(joined.accessToken)
            XCTAssertFalse(secondActive)
            do {
                _ = try await app("app2", scope: "openid").signIn(withDeviceSession: handedOver)
                XCTFail("an ended device session signs nobody in")
            } catch ModgudError.sessionEnded {
                // sign in as usual
            }
        }
    }

    /// The admin API sets the teams (`NativeSSOTeams`, a patch replaces the list), refuses a
    /// client in two teams with nothing written, and discovery follows.
    func testTheAdminAPISetsTheTeamsAndRefusesAClientInTwo() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        try await harness.app.test(.router) { client in
            let admin = AdminAPINativeGrantTests.admin
            let before = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertNil(before.json["native_sso_supported"], "no team, no Native SSO")
            let set = try await H.call(client, .patch, "/admin/api/realms/dev", #"{"NativeSSOTeams":[{"Name":"acme","Clients":["app","plain"]}]}"#, headers: admin)
            XCTAssertEqual(set.status, .ok, set.body)
            let teams = try XCTUnwrap((set.json["Realm"] as? [String: Any])?["NativeSSOTeams"] as? [[String: Any]], set.body)
            XCTAssertEqual(teams.first?["Clients"] as? [String], ["app", "plain"])
            let twice = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"NativeSSOTeams":[{"Name":"a","Clients":["app"]},{"Name":"b","Clients":["app"]}]}"#, headers: admin)
            XCTAssertEqual(twice.status, .badRequest, twice.body)
            XCTAssertTrue(twice.body.contains("NativeSSO.ClientInTwoTeams"), twice.body)
            let kept = try await H.call(client, .get, "/admin/api/realms/dev", "", headers: admin)
            let keptTeams = kept.json["NativeSSOTeams"] as? [[String: Any]]
            XCTAssertEqual(keptTeams?.first?["Name"] as? String, "acme", "nothing written on refusal: \(kept.body)")
            let after = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            XCTAssertEqual(after.json["native_sso_supported"] as? Bool, true, after.body)
        }
    }

    /// Signing out on the device is a Shared Signals session-revoked for each app's session
    /// (CAEP, RFC 9493 section 3.3: the user and the session), the person its initiator.
    func testSigningOutOnTheDeviceSendsASessionRevokedForEachAppsSession() async throws {
        harness = try await Self.teamHarness()
        let harness = harness!
        let (_, secret) = try await harness.core.administration.clients.create(
            realm: "dev", id: "poller", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["ssf.manage"]),
            metadata: .init())
        typealias S = SharedSignalsManagementTests
        try await harness.app.test(.router) { client in
            let manager = try await S.token(client, "poller", try XCTUnwrap(secret), scope: "ssf.manage")
            let created = try await H.call(client, .post, "/ssf/stream", "{}", headers: S.headers(manager))
            let stream = try XCTUnwrap(created.json["stream_id"] as? String, created.body)
            _ = try await H.requestCode(client, "ada@example.com")
            let first = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"), scope: Self.scope)
            let idToken = try XCTUnwrap(first.json["id_token"] as? String, first.body)
            let deviceSecret = try XCTUnwrap(first.json["device_secret"] as? String)
            let sid = try XCTUnwrap(try Self.claims(idToken)["sid"] as? String)
            let issuer = try XCTUnwrap(try Self.claims(idToken)["iss"] as? String)
            let second = try await Self.exchange(client, idToken: idToken, secret: deviceSecret, audience: issuer)
            XCTAssertEqual(second.status, .ok, second.body)
            try await S.transmit(harness)
            _ = try await S.poll(client, manager, stream, ack: Array(try await S.poll(client, manager, stream).keys))

            let signOut = try await H.call(client, .post, "/connect/revoke", "client_id=app&token=\(deviceSecret)", headers: H.form)
            XCTAssertEqual(signOut.status, .ok, signOut.body)
            try await S.transmit(harness)
            let revoked = try await S.poll(client, manager, stream).values.map { try S.claims($0) }.compactMap { claims -> (String, [String: Any])? in
                guard let event = (claims["events"] as? [String: Any])?["https://schemas.openid.net/secevent/caep/event-type/session-revoked"] as? [String: Any],
                    let session = ((claims["sub_id"] as? [String: Any])?["session"] as? [String: Any])?["id"] as? String
                else { return nil }
                return (session, event)
            }
            XCTAssertEqual(revoked.count, 2, "one per app: \(revoked)")
            XCTAssertEqual(Set(revoked.map(\.0)).count, 2)
            XCTAssertTrue(revoked.map(\.0).contains(sid), "the device session's own sign-in is one of them")
            for (_, event) in revoked {
                XCTAssertEqual(event["initiating_entity"] as? String, "user")
                XCTAssertTrue(((event["reason_admin"] as? [String: Any])?["en"] as? String ?? "").contains("signed out on the device"), "\(event)")
            }
        }
    }
}
