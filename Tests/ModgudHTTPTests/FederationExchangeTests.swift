import Foundation
import HTTPTypes
import HummingbirdTesting
import MailTestSupport
import ModgudHTTP
import PostgresTestSupport
import ModgudClient
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 48: Sign in with Apple and Google over the token endpoint (RFC 8693), against the
/// stand-in provider over a socket: a first sign-up, a sign-in again, a link by a verified
/// address where the realm allows it, and each takeover attempt refused with nothing created.
final class FederationExchangeTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let exchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"

    /// The harness's realm with Apple (linking by email code only) and Google (linking by a
    /// verified address) served by `idp`, and its `app` client allowed the exchange.
    static func start(_ idp: StandInProvider, issuerScheme: String = "https") async throws -> EmailSignInHarness {
        let harness = try await H(issuerScheme: issuerScheme)
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
            var google = FederatedProvider.google(audiences: ["server-client.apps.googleusercontent.com"])
            google.jwksURL = idp.googleJWKS
            google.linking = .verifiedEmail
            var apple = FederatedProvider.apple(audiences: ["com.example.app"])
            apple.jwksURL = idp.appleJWKS
            // An OpenID provider whose keys cannot be fetched (nothing listens there).
            let down = FederatedProvider(
                id: "down", kind: .oidc, issuer: "https://down.example", jwksURL: "http://127.0.0.1:\(Self.closedPort)/keys",
                audiences: ["server-client.apps.googleusercontent.com"])
            $0.federatedProviders = [apple, google, down]
        }
        _ = try await harness.core.administration.clients.update(realm: "dev", id: "app", metadata: .init()) { $0.grants.insert(.tokenExchange) }
        return harness
    }

    /// A port nothing listens on (bound, then closed).
    static let closedPort: Int = (try? SMTPSink.freePort()) ?? 9

    static func nonce(_ client: some TestClientProtocol) async throws -> (nonce: String, hash: String) {
        let issued = try await H.call(client, .post, "/connect/federation/nonce", "", headers: [:])
        return (try XCTUnwrap(issued.json["nonce"] as? String), try XCTUnwrap(issued.json["nonce_sha256"] as? String))
    }

    static func exchange(_ client: some TestClientProtocol, _ token: String, nonce: String?, clientID: String = "app", extra: [(String, String)] = [])
        async throws -> H.Reply
    {
        var fields = [
            ("grant_type", Self.exchange), ("client_id", clientID), ("subject_token", token), ("subject_token_type", Self.idTokenType),
            ("scope", "openid email offline_access"),
        ]
        if let nonce { fields.append(("nonce", nonce)) }
        return try await H.token(client, fields + extra)
    }

    static func subject(_ reply: H.Reply) throws -> String {
        let token = try XCTUnwrap(reply.json["id_token"] as? String, reply.body)
        let payload = try XCTUnwrap(token.split(separator: ".").dropFirst().first)
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let claims = try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: base64))) as? [String: Any])
        return try XCTUnwrap(claims["sub"] as? String)
    }

    func testAFirstSignUpThenASignInAgainAndTheNonceIsSpentOnce() async throws {
        let idp = try StandInProvider()
        harness = try await Self.start(idp)
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let first = try await Self.nonce(client)
            let token = try await idp.mint("apple", ["nonce": first.hash, "email": "relay-1@privaterelay.appleid.com"])
            let signedUp = try await Self.exchange(client, token, nonce: first.nonce, extra: [("given_name", "Ada"), ("family_name", "Lovelace")])
            XCTAssertEqual(signedUp.status, .ok, signedUp.body)
            XCTAssertEqual(signedUp.json["issued_token_type"] as? String, "urn:ietf:params:oauth:token-type:access_token")
            XCTAssertNotNil(signedUp.json["refresh_token"])
            let user = try Self.subject(signedUp)
            let stored = try await harness.core.administration.users.profile(realm: "dev", userID: try XCTUnwrap(UUID(uuidString: user)))
            XCTAssertEqual(stored.state.registeredVia, "federation:apple")
            XCTAssertEqual(stored.state.identities, ["apple"])
            XCTAssertEqual(stored.profile.email, "relay-1@privaterelay.appleid.com", "a private relay address is the account's address")
            // The same nonce again: spent.
            let replayed = try await Self.exchange(client, token, nonce: first.nonce)
            XCTAssertEqual(replayed.json["error"] as? String, "invalid_grant", replayed.body)
            XCTAssertTrue((replayed.json["error_description"] as? String ?? "").hasPrefix("nonce:"), replayed.body)
            // A new sign-in, a new nonce: the same person.
            let second = try await Self.nonce(client)
            let again = try await Self.exchange(client, try await idp.mint("apple", ["nonce": second.hash, "email": NSNull()]), nonce: second.nonce)
            XCTAssertEqual(again.status, .ok, again.body)
            XCTAssertEqual(try Self.subject(again), user, "Apple sends the address only at first; the link finds the user")
            // The provider's subject is sealed: not in any event, nor in the link table.
            let pattern = "%001234.5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d.1234%"
            let plaintext = try await harness.core.pool.query(
                "SELECT (SELECT count(*) FROM events WHERE payload::text LIKE \(pattern)) + (SELECT count(*) FROM federated_identities WHERE subject_index LIKE \(pattern))"
            ).first?.decode(Int.self, at: 0)
            XCTAssertEqual(plaintext, 0)
            // Erasure removes the link: the same Apple account then makes a new account.
            _ = try await harness.core.administration.users.erase(realm: "dev", user, metadata: .init())
            let links = try await harness.core.pool.query("SELECT count(*) FROM federated_identities").first?.decode(Int.self, at: 0)
            XCTAssertEqual(links, 0)
            let third = try await Self.nonce(client)
            let afterErasure = try await Self.exchange(
                client, try await idp.mint("apple", ["nonce": third.hash, "email": "relay-1@privaterelay.appleid.com"]), nonce: third.nonce)
            XCTAssertEqual(afterErasure.status, .ok, afterErasure.body)
            XCTAssertNotEqual(try Self.subject(afterErasure), user, "the erased person's link is gone")
        }
    }

    func testLinkingFollowsTheProvidersRuleAndTakeoversAreRefusedWithNothingCreated() async throws {
        let idp = try StandInProvider()
        harness = try await Self.start(idp)
        let harness = self.harness!
        let owner = try await harness.registerUser("owner@example.com")
        try await harness.app.test(.router) { client in
            func refused(_ provider: String, _ claims: [String: Any], _ reason: String, line: UInt = #line) async throws {
                let nonce = try await Self.nonce(client)
                var claims = claims
                if claims["nonce"] == nil { claims["nonce"] = nonce.hash }
                let before = try await harness.eventCount()
                let reply = try await Self.exchange(client, try await idp.mint(provider, claims), nonce: nonce.nonce)
                XCTAssertEqual(reply.json["error"] as? String, "invalid_grant", reply.body, line: line)
                XCTAssertTrue((reply.json["error_description"] as? String ?? "").hasPrefix(reason + ":"), reply.body, line: line)
                let after = try await harness.eventCount()
                XCTAssertEqual(after, before, "nothing is created on a refusal", line: line)
            }
            // Apple links by email code only: an Apple account with the owner's address gets nothing.
            try await refused("apple", ["email": "owner@example.com"], "link_requires_email_code")
            // Google with an address Google did not verify: no link.
            try await refused("google", ["email": "owner@example.com", "email_verified": false], "link_requires_email_code")
            // Forged, foreign, expired, unsigned.
            try await refused("google", ["aud": "someone-elses-client.apps.googleusercontent.com"], "audience")
            try await refused("google", ["_key": "stranger"], "signature")
            try await refused("google", ["_alg": "none"], "algorithm")
            try await refused("google", ["exp": Int(Date().timeIntervalSince1970) - 3600], "expired")
            try await refused("google", ["nonce": String(repeating: "0", count: 64)], "nonce")
            try await refused("google", ["iss": "https://accounts.example.com"], "issuer")
            let links = try await harness.core.pool.query("SELECT count(*) FROM federated_identities").first?.decode(Int.self, at: 0)
            XCTAssertEqual(links, 0)
            // Google verified the owner's address, and this realm links on that: the owner signs in.
            let nonce = try await Self.nonce(client)
            let linked = try await Self.exchange(client, try await idp.mint("google", ["nonce": nonce.hash, "email": "owner@example.com"]), nonce: nonce.nonce)
            XCTAssertEqual(linked.status, .ok, linked.body)
            XCTAssertEqual(try Self.subject(linked), owner.uuidString.lowercased())
            // A client without the grant is refused before anything is read.
            let other = try await Self.nonce(client)
            let unauthorized = try await Self.exchange(
                client, try await idp.mint("google", ["nonce": other.hash]), nonce: other.nonce, clientID: "plain")
            XCTAssertEqual(unauthorized.json["error"] as? String, "unauthorized_client", unauthorized.body)
            // A provider whose keys cannot be fetched: a retryable refusal, never a 500, nothing created.
            let third = try await Self.nonce(client)
            let before = try await harness.eventCount()
            let down = try await Self.exchange(client, try await idp.mint("google", ["nonce": third.hash, "iss": "https://down.example"]), nonce: third.nonce)
            XCTAssertEqual(down.json["error"] as? String, "temporarily_unavailable", down.body)
            let after = try await harness.eventCount()
            XCTAssertEqual(after, before)
        }
    }

    /// `ModgudClient.signIn(withAppleIDToken:)` and `signIn(withGoogleIDToken:)` over a live
    /// socket: the nonce fetched, its hash in the platform's token, the session adopted.
    func testModgudClientSignsInWithAppleAndGoogle() async throws {
        let idp = try StandInProvider()
        harness = try await Self.start(idp, issuerScheme: "http")
        let harness = self.harness!
        try await harness.app.test(.live) { server in
            let issuer = URL(string: "http://localhost:\(try XCTUnwrap(server.port))")!
            let app = ModgudClient(configuration: ModgudClient.Configuration(issuer: issuer, clientID: "app", scope: "openid email offline_access"))
            let appleNonce = try await app.federationNonce()
            let apple = try await idp.mint("apple", ["nonce": appleNonce.hashed, "email": "ios-user@privaterelay.appleid.com", "sub": "000111.apple"])
            let appleSession = try await app.signIn(withAppleIDToken: apple, nonce: appleNonce, givenName: "Grace", familyName: "Hopper")
            XCTAssertNotNil(appleSession.refreshToken)
            let appleInfo = try await app.userInfo()
            XCTAssertEqual(appleInfo["email"], .string("ios-user@privaterelay.appleid.com"))
            let googleNonce = try await app.federationNonce()
            let google = try await idp.mint("google", ["nonce": googleNonce.hashed, "email": "android-user@gmail.com", "sub": "2222"])
            _ = try await app.signIn(withGoogleIDToken: google, nonce: googleNonce)
            let googleInfo = try await app.userInfo()
            XCTAssertEqual(googleInfo["email"], .string("android-user@gmail.com"))
            XCTAssertNotEqual(googleInfo["sub"], appleInfo["sub"])
            // The same nonce twice: the second sign-in is refused.
            do {
                _ = try await app.signIn(withGoogleIDToken: google, nonce: googleNonce)
                XCTFail("a nonce spent twice")
            } catch ModgudError.oauth(let code, let description, _) {
                XCTAssertEqual(code, "invalid_grant")
                XCTAssertTrue(description?.hasPrefix("nonce:") == true, description ?? "")
            }
        }
    }

    /// Two instances, hour-long caches, requests alternating: providers set on A hold on B at
    /// once; a nonce issued by A is spent by B's exchange and refused on A; the user B created
    /// signs in on A.
    func testTwoInstancesAgreeOnProvidersNoncesAndLinks() async throws {
        let idp = try StandInProvider()
        let database = try await TestDatabase.create(maxConnections: 40)
        let pools = [database.pool, database.makePool(maxConnections: 10)]
        let cores = try pools.map { try ModgudCore(pool: $0, masterKey: Array(repeating: 3, count: 32), settingsMaxAge: .seconds(3600)) }
        let listeners = try await SettingsListeners.start(pools, cores)
        let (a, b) = (cores[0].administration, cores[1].administration)
        _ = try await a.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true)), metadata: .init())
        try await cores[0].keys.rotate(realm: "dev", now: Date(), metadata: .init())
        _ = try await b.clients.create(
            realm: "dev", id: "app", settings: ClientSettings(type: .public, grants: [.tokenExchange, .refreshToken], allowedScopes: ["openid", "email", "offline_access"]),
            metadata: .init())
        try await buildApplication(core: cores[0]).test(.router) { onA in
            try await buildApplication(core: cores[1]).test(.router) { onB in
                // B reads the realm (and holds it for an hour) before A names the providers.
                let before = try await Self.nonce(onB)
                let unknown = try await Self.exchange(onB, try await idp.mint("apple", ["nonce": before.hash]), nonce: before.nonce)
                XCTAssertTrue((unknown.json["error_description"] as? String ?? "").hasPrefix("issuer:"), unknown.body)
                _ = try await a.realms.update("dev", metadata: .init()) {
                    var apple = FederatedProvider.apple(audiences: ["com.example.app"])
                    apple.jwksURL = idp.appleJWKS
                    $0.federatedProviders = [apple]
                }
                let nonce = try await Self.nonce(onA)
                let token = try await idp.mint("apple", ["nonce": nonce.hash, "email": "two@privaterelay.appleid.com"])
                let created = try await Self.exchange(onB, token, nonce: nonce.nonce)
                XCTAssertEqual(created.status, .ok, created.body)
                let replayed = try await Self.exchange(onA, token, nonce: nonce.nonce)
                XCTAssertTrue((replayed.json["error_description"] as? String ?? "").hasPrefix("nonce:"), replayed.body)
                let again = try await Self.nonce(onB)
                let signedIn = try await Self.exchange(onA, try await idp.mint("apple", ["nonce": again.hash]), nonce: again.nonce)
                XCTAssertEqual(signedIn.status, .ok, signedIn.body)
                XCTAssertEqual(try Self.subject(signedIn), try Self.subject(created))

                // B holds the session it started (refreshed once, its family cached); Apple's
                // consent-revoked reaches A: B's next refresh is refused, and Apple's retry on B
                // changes nothing.
                let refreshed = try await H.token(
                    onB, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(created.json["refresh_token"] as? String))])
                XCTAssertEqual(refreshed.status, .ok, refreshed.body)
                let payload = try await idp.appleNotification(["type": "consent-revoked", "sub": "001234.5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d.1234"])
                let notified = try await H.call(
                    onA, .post, "/connect/federation/apple/notifications", H.jsonBody(["payload": payload]), headers: H.json)
                XCTAssertEqual(notified.json["outcome"] as? String, "unlinked", notified.body)
                let retried = try await H.call(
                    onB, .post, "/connect/federation/apple/notifications", H.jsonBody(["payload": payload]), headers: H.json)
                XCTAssertEqual(retried.json["outcome"] as? String, "duplicate", retried.body)
                let ended = try await H.token(
                    onB, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(refreshed.json["refresh_token"] as? String))])
                XCTAssertEqual(ended.json["error"] as? String, "invalid_grant", "the session A ended is over on B: \(ended.body)")
            }
        }
        for listener in listeners { listener.cancel() }
        await pools[1].close()
        await database.drop()
    }
}
