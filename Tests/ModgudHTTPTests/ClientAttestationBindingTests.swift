import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 65: attestation `required` is per client and has no realm-wide effect. A request that
/// names no client is served for the realm's other clients, and what it starts (a mailed code,
/// a magic link, a passkey ceremony) is bound to no attested instance, so the `required` client
/// cannot redeem it; a `required` client's flow is its attested instance's from the first
/// request to the token; what a request starts for one client, another cannot redeem. Two
/// instances on one database, requests alternating between them.
final class ClientAttestationBindingTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let address = "ada@example.com"
    static let origin = "https://acme.test"

    /// `ClientAttestationTests.start`'s clients (`genuine` required, `soft` allowed, `open` off;
    /// RP-ID `acme.test`), the realm's primary domain for a ceremony that names no client, room
    /// for many requests per mailbox, Ada, and a second instance on the same database.
    func start(_ forge: PlatformAttestationForge) async throws -> (EmailSignInHarness, ModgudCore) {
        let harness = try await ClientAttestationTests.start(forge)
        self.harness = harness
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
            $0.primaryDomain = "acme.test"
            $0.rateLimitOverrides[RateLimitPolicy.requestPerMailbox.name] = RateLimitSetting(limit: 100, windowSeconds: 3600, burst: 100)
        }
        _ = try await harness.registerUser(Self.address)
        let clock = harness.clock
        let second = try ModgudCore(
            pool: harness.database.makePool(maxConnections: 10), masterKey: H.masterKey, now: { clock.now() },
            attestationRoots: AttestationRoots(apple: [forge.apple.root], google: [forge.google.root]))
        return (harness, second)
    }

    /// An attested instance of `genuine`, and its headers (a fresh PoP each).
    struct Instance {
        let app: AttestedApp
        let attestation: String
        let issuer: String
        let clock: TestClock

        func headers(_ base: HTTPFields) throws -> HTTPFields {
            app.headers(attestation, pop: try app.pop(audience: issuer, iat: clock.now()), base)
        }
    }

    static func attest(_ forge: PlatformAttestationForge, on client: some TestClientProtocol, clock: TestClock) async throws -> Instance {
        let app = AttestedApp(forge: forge)
        let attested = try await app.attestWithAndroid(client, clientID: "genuine")
        XCTAssertEqual(attested.status, .ok, attested.body)
        return Instance(
            app: app, attestation: try XCTUnwrap(attested.json["client_attestation"] as? String), issuer: try await ClientAttestationTests.issuer(client),
            clock: clock)
    }

    // MARK: Requests

    static func redeemCode(_ client: some TestClientProtocol, _ code: String, clientID: String, headers: HTTPFields = H.form) async throws -> H.Reply {
        try await H.token(
            client,
            [("grant_type", "urn:cocoar:otp"), ("client_id", clientID), ("username", address), ("otp_code", code), ("scope", "openid email offline_access")],
            headers: headers)
    }

    static func redeemLink(_ client: some TestClientProtocol, _ link: (link: String, userID: String, token: String), clientID: String, headers: HTTPFields = H.form)
        async throws -> H.Reply
    {
        try await H.token(
            client, [("grant_type", "urn:cocoar:magic"), ("client_id", clientID), ("user_id", link.userID), ("magic_token", link.token), ("scope", "openid email")],
            headers: headers)
    }

    static func requestLink(_ client: some TestClientProtocol, _ body: [String: String], headers: HTTPFields = H.json) async throws -> H.Reply {
        try await H.call(client, .post, "/api/account/magic-link/request", H.jsonBody(body), headers: headers)
    }

    static func begin(_ client: some TestClientProtocol, _ form: String, headers: HTTPFields = H.form) async throws -> (id: String, challenge: [UInt8]) {
        let reply = try await H.call(client, .post, "/connect/passkey/begin", form, headers: headers)
        XCTAssertEqual(reply.status, .ok, reply.body)
        let options = try XCTUnwrap(reply.json["options"] as? [String: Any])
        return (try XCTUnwrap(reply.json["ceremonyId"] as? String), try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String))))
    }

    static func redeemCeremony(_ client: some TestClientProtocol, _ ceremony: String, _ assertion: String, clientID: String, headers: HTTPFields = H.form)
        async throws -> H.Reply
    {
        try await H.token(
            client, [("grant_type", "urn:cocoar:passkey"), ("client_id", clientID), ("ceremony_id", ceremony), ("assertion", assertion), ("scope", "openid")],
            headers: headers)
    }

    /// The uniform refusal of a wrong code, link or ceremony.
    static func assertInvalid(_ reply: H.Reply, _ description: String, line: UInt = #line) {
        XCTAssertEqual(reply.status, .badRequest, reply.body, line: line)
        XCTAssertEqual(reply.json["error"] as? String, "invalid_grant", reply.body, line: line)
        XCTAssertEqual(reply.json["error_description"] as? String, description, reply.body, line: line)
    }

    /// Events of codes, links and ceremonies: a refused redemption adds none.
    static func flowEvents(_ harness: EmailSignInHarness) async throws -> Int {
        try await harness.core.pool.query("SELECT count(*) FROM events WHERE stream_type IN ('email-challenge', 'passkey-ceremony')").first!
            .decode(Int.self, at: 0)
    }

    static let invalidCode = "Invalid or expired code."
    static let invalidLink = "Invalid or expired link."
    static let invalidCeremony = "Invalid or expired passkey assertion."

    // MARK: Tests

    /// A code, a link and a ceremony asked for without naming a client: served, though
    /// `genuine` requires attestation; `genuine`'s attested instance cannot redeem them (and
    /// the refusal spends nothing), the realm's other clients can. A code asked for naming one
    /// client is that client's; within the resend cooldown, another client's request gets its own.
    func testWhatARequestNamingNoClientStartsIsServedButNotTheRequiredClients() async throws {
        let forge = try PlatformAttestationForge()
        let (harness, second) = try await start(forge)
        let steps = PasskeySteps(harness: harness)
        let authenticator = SoftwareAuthenticator()
        try await harness.app.test(.router) { onA in
            try await buildApplication(core: second, configuration: harness.configuration).test(.router) { onB in
                let genuine = try await Self.attest(forge, on: onA, clock: harness.clock)
                // An email code: served on B, refused to the attested instance on A, redeemed by `open` on B.
                let asked = try await H.requestCode(onB, Self.address)
                XCTAssertEqual(asked.status, .ok, asked.body)
                let code = try await harness.code(for: Self.address)
                let before = try await Self.flowEvents(harness)
                Self.assertInvalid(try await Self.redeemCode(onA, code, clientID: "genuine", headers: try genuine.headers(H.form)), Self.invalidCode)
                let after = try await Self.flowEvents(harness)
                XCTAssertEqual(after, before, "the refusal wrote nothing: no attempt counted")
                let signedIn = try await Self.redeemCode(onB, code, clientID: "open")
                XCTAssertEqual(signedIn.status, .ok, signedIn.body)

                // A magic link: the same.
                let linkAsked = try await Self.requestLink(onA, ["Email": Self.address])
                XCTAssertEqual(linkAsked.status, .ok, linkAsked.body)
                let link = try await harness.magicLink(for: Self.address)
                Self.assertInvalid(try await Self.redeemLink(onB, link, clientID: "genuine", headers: try genuine.headers(H.form)), Self.invalidLink)
                let linked = try await Self.redeemLink(onA, link, clientID: "soft")
                XCTAssertEqual(linked.status, .ok, linked.body)

                // A usernameless passkey ceremony: begun on B without client_id, refused to the
                // attested instance on A with a valid assertion, which `soft` then redeems on B.
                var (credential, _) = try await steps.enroll(onA, token: try XCTUnwrap(signedIn.json["access_token"] as? String), origin: Self.origin)
                let begun = try await Self.begin(onB, "")
                let assertion = steps.json(authenticator.assert(&credential, .init(challenge: begun.challenge, origin: Self.origin)))
                let beforeCeremony = try await Self.flowEvents(harness)
                Self.assertInvalid(
                    try await Self.redeemCeremony(onA, begun.id, assertion, clientID: "genuine", headers: try genuine.headers(H.form)), Self.invalidCeremony)
                let afterCeremony = try await Self.flowEvents(harness)
                XCTAssertEqual(afterCeremony, beforeCeremony, "the ceremony was not spent")
                let passkeySignIn = try await Self.redeemCeremony(onB, begun.id, assertion, clientID: "soft")
                XCTAssertEqual(passkeySignIn.status, .ok, passkeySignIn.body)

                // Named for `open`: `soft` cannot redeem it, `open` can.
                _ = try await H.requestCode(onA, Self.address, extra: ["ClientId": "open"])
                let openCode = try await harness.code(for: Self.address, number: 2)
                Self.assertInvalid(try await Self.redeemCode(onB, openCode, clientID: "soft"), Self.invalidCode)
                let openSignIn = try await Self.redeemCode(onA, openCode, clientID: "open")
                XCTAssertEqual(openSignIn.status, .ok, openSignIn.body)
                // A ceremony begun for `open` is `open`'s too.
                let openCeremony = try await Self.begin(onA, "client_id=open")
                let openAssertion = steps.json(authenticator.assert(&credential, .init(challenge: openCeremony.challenge, origin: Self.origin)))
                Self.assertInvalid(try await Self.redeemCeremony(onB, openCeremony.id, openAssertion, clientID: "soft"), Self.invalidCeremony)
                let openPasskey = try await Self.redeemCeremony(onA, openCeremony.id, openAssertion, clientID: "open")
                XCTAssertEqual(openPasskey.status, .ok, openPasskey.body)

                // The resend cooldown is silent for the same binding only: `soft` asks within it
                // after `open` did, gets its own code, and `open`'s is void.
                _ = try await H.requestCode(onB, Self.address, extra: ["ClientId": "open"])
                let voided = try await harness.code(for: Self.address, number: 3)
                _ = try await H.requestCode(onA, Self.address, extra: ["ClientId": "soft"])
                let softCode = try await harness.code(for: Self.address, number: 4)
                Self.assertInvalid(try await Self.redeemCode(onB, voided, clientID: "open"), Self.invalidCode)
                let softSignIn = try await Self.redeemCode(onA, softCode, clientID: "soft")
                XCTAssertEqual(softSignIn.status, .ok, softSignIn.body)
            }
        }
        await second.pool.close()
    }

    /// `genuine`'s flows, begun by one attested instance and redeemed on the other server
    /// instance: another attested instance of the same client, another client and an
    /// unattested script get nothing; the instance that began it signs in, and its tokens name it.
    func testARequiredClientsFlowIsItsAttestedInstancesFromTheFirstRequestToTheToken() async throws {
        let forge = try PlatformAttestationForge()
        let (harness, second) = try await start(forge)
        let steps = PasskeySteps(harness: harness)
        let authenticator = SoftwareAuthenticator()
        try await harness.app.test(.router) { onA in
            try await buildApplication(core: second, configuration: harness.configuration).test(.router) { onB in
                let first = try await Self.attest(forge, on: onA, clock: harness.clock)
                let other = try await Self.attest(forge, on: onB, clock: harness.clock)
                func attestedInstance(_ reply: H.Reply) throws -> String? {
                    let claims = try ClientAttestationTests.claims(try XCTUnwrap(reply.json["access_token"] as? String, reply.body))
                    return (claims["client_attestation"] as? [String: String])?["jkt"]
                }

                // A code asked for by the first instance on A.
                let asked = try await H.call(
                    onA, .post, "/api/account/native/otp/request", H.jsonBody(["Email": Self.address, "ClientId": "genuine"]), headers: try first.headers(H.json))
                XCTAssertEqual(asked.status, .ok, asked.body)
                let code = try await harness.code(for: Self.address)
                Self.assertInvalid(try await Self.redeemCode(onB, code, clientID: "genuine", headers: try other.headers(H.form)), Self.invalidCode)
                Self.assertInvalid(try await Self.redeemCode(onA, code, clientID: "soft"), Self.invalidCode)
                let script = try await Self.redeemCode(onB, code, clientID: "genuine")
                XCTAssertEqual(script.status, .unauthorized, script.body)
                XCTAssertEqual(script.json["error"] as? String, "invalid_client_attestation", script.body)
                let signedIn = try await Self.redeemCode(onB, code, clientID: "genuine", headers: try first.headers(H.form))
                XCTAssertEqual(signedIn.status, .ok, signedIn.body)
                XCTAssertEqual(try attestedInstance(signedIn), first.app.thumbprint)

                // A magic link asked for by the other instance on B, named by its attestation alone.
                let linkAsked = try await Self.requestLink(onB, ["Email": Self.address], headers: try other.headers(H.json))
                XCTAssertEqual(linkAsked.status, .ok, linkAsked.body)
                let link = try await harness.magicLink(for: Self.address)
                Self.assertInvalid(try await Self.redeemLink(onA, link, clientID: "genuine", headers: try first.headers(H.form)), Self.invalidLink)
                Self.assertInvalid(try await Self.redeemLink(onB, link, clientID: "open"), Self.invalidLink)
                let linked = try await Self.redeemLink(onA, link, clientID: "genuine", headers: try other.headers(H.form))
                XCTAssertEqual(linked.status, .ok, linked.body)
                XCTAssertEqual(try attestedInstance(linked), other.app.thumbprint)

                // A passkey ceremony begun by the first instance on B.
                var (credential, _) = try await steps.enroll(onA, token: try XCTUnwrap(signedIn.json["access_token"] as? String), origin: Self.origin)
                let begun = try await Self.begin(onB, "client_id=genuine", headers: try first.headers(H.form))
                let assertion = steps.json(authenticator.assert(&credential, .init(challenge: begun.challenge, origin: Self.origin)))
                Self.assertInvalid(
                    try await Self.redeemCeremony(onA, begun.id, assertion, clientID: "genuine", headers: try other.headers(H.form)), Self.invalidCeremony)
                let passkeySignIn = try await Self.redeemCeremony(onA, begun.id, assertion, clientID: "genuine", headers: try first.headers(H.form))
                XCTAssertEqual(passkeySignIn.status, .ok, passkeySignIn.body)
                XCTAssertEqual(try attestedInstance(passkeySignIn), first.app.thumbprint)
            }
        }
        await second.pool.close()
    }
}
