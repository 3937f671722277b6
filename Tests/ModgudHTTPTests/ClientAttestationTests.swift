import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudClient
import ModgudDomain
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import Synchronization
import XCTest

/// Issue 47: only genuine apps get tokens. Test authorities stand in for Apple's and Google's
/// roots (`PlatformAttestationForge`); the app instance is `AttestedApp`. A `required` client
/// refuses a script that has only its client id at every endpoint, before any mail, ceremony
/// or session exists; an attested instance signs in and its tokens say so; each check of the
/// attester and of the authorization server has its failing case. What a request that names
/// no client starts is served and bound to no instance (issue 65): `ClientAttestationBindingTests`.
final class ClientAttestationTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let scopes: Set<String> = ["openid", "email", "offline_access"]

    /// A harness whose attester trusts `forge`'s roots, with `genuine` (required), `soft`
    /// (allowed) and `open` (off).
    static func start(_ forge: PlatformAttestationForge, issuerScheme: String = "https") async throws -> EmailSignInHarness {
        let harness = try await EmailSignInHarness(
            issuerScheme: issuerScheme, attestationRoots: AttestationRoots(apple: [forge.apple.root], google: [forge.google.root]))
        for (id, mode) in [("genuine", ClientAttestationMode.required), ("soft", .allowed), ("open", .off)] {
            var settings = ClientSettings(
                type: .public, grants: [.otp, .magic, .passkey, .refreshToken], allowedScopes: scopes, accessTokenFormat: .jwt, passkeySignUp: true,
                appleAppIDs: [AttestedApp.appleAppID],
                androidApps: [AndroidApp(packageName: AttestedApp.package, sha256Fingerprints: [AndroidApp.fingerprintText(AttestedApp.signingDigest)])])
            settings.clientAttestation = mode
            settings.rpID = "acme.test"
            _ = try await harness.core.administration.clients.create(realm: "dev", id: id, settings: settings, metadata: .init())
        }
        return harness
    }

    static func issuer(_ client: some TestClientProtocol) async throws -> String {
        let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
        return try XCTUnwrap(discovery.json["issuer"] as? String)
    }

    static func claims(_ jwt: String) throws -> [String: Any] {
        let part = try XCTUnwrap(jwt.split(separator: ".").dropFirst().first)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(Base64URL.decode(part)))) as? [String: Any])
    }

    static func assertRefused(_ reply: H.Reply, _ code: String = "invalid_client_attestation", _ fragment: String = "", line: UInt = #line) {
        XCTAssertEqual(reply.json["error"] as? String, code, reply.body, line: line)
        XCTAssertTrue(fragment.isEmpty || (reply.json["error_description"] as? String ?? "").contains(fragment), reply.body, line: line)
        XCTAssertNotNil(reply.headers[HTTPField.Name("OAuth-Client-Attestation-Challenge")!], "a fresh challenge comes with every refusal", line: line)
    }

    func testARequiredClientRefusesAScriptWithOnlyItsClientIDAtEveryEndpoint() async throws {
        harness = try await Self.start(try PlatformAttestationForge())
        let harness = self.harness!
        let json: HTTPFields = [.contentType: "application/json"]
        try await harness.app.test(.live) { client in
            let address = "script@example.com"
            // Issue 65: each request names the client; one that names none is served
            // (`ClientAttestationBindingTests`), and what it starts the client cannot redeem.
            let requests: [(String, String, HTTPFields, Int)] = [
                ("/api/account/native/otp/request", #"{"Email":"\#(address)","ClientId":"genuine"}"#, json, 401),
                ("/api/account/native/register", #"{"Email":"\#(address)","ClientId":"genuine","FirstName":"A","LastName":"B"}"#, json, 401),
                ("/api/account/magic-link/request", #"{"Email":"\#(address)","ClientId":"genuine"}"#, json, 401),
                ("/connect/token", "grant_type=urn:cocoar:otp&client_id=genuine&username=\(address)&otp_code=123456", H.form, 401),
                ("/connect/authorization-challenge", "client_id=genuine&login_hint=\(address)&code_challenge=\(String(repeating: "a", count: 43))", H.form, 401),
                ("/connect/passkey/begin", "client_id=genuine", H.form, 401),
                ("/connect/passkey/register/begin", #"{"ClientId":"genuine","Email":"\#(address)"}"#, json, 401),
                ("/passwordless/start", "client_id=genuine&connection=email&send=code&email=\(address)", H.form, 401),
                ("/passkey/register", #"{"client_id":"genuine","user_profile":{"email":"\#(address)"}}"#, json, 401),
                ("/passkey/challenge", #"{"client_id":"genuine"}"#, json, 401),
            ]
            for (path, body, headers, status) in requests {
                let reply = try await H.call(client, .post, path, body, headers: headers)
                XCTAssertEqual(reply.status.code, status, "\(path): \(reply.body)")
                Self.assertRefused(reply)
            }
            // A made-up attestation is no better than none.
            var forged = json
            forged[HTTPField.Name("OAuth-Client-Attestation")!] = "eyJhbGciOiJub25lIiwidHlwIjoib2F1dGgtY2xpZW50LWF0dGVzdGF0aW9uK2p3dCJ9.eyJzdWIiOiJnZW51aW5lIn0."
            forged[HTTPField.Name("OAuth-Client-Attestation-PoP")!] = "x.y.z"
            Self.assertRefused(try await H.call(client, .post, "/api/account/native/otp/request", #"{"Email":"\#(address)"}"#, headers: forged))
        }
        // Nothing was sent, stored or begun.
        let outbox = try await harness.outboxCount()
        XCTAssertEqual(outbox, 0)
        let begun = try await harness.core.pool.query(
            "SELECT count(*) FROM events WHERE stream_type IN ('passkey-ceremony', 'email-challenge', 'authorization-session')").first!.decode(Int.self, at: 0)
        XCTAssertEqual(begun, 0)
    }

    func testAnAttestedInstanceSignsInAndItsTokensSayItWasAttested() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge)
        let harness = self.harness!
        let app = AttestedApp(forge: forge)
        try await harness.app.test(.router) { client in
            let issuer = try await Self.issuer(client)
            let attested = try await app.attestWithApple(client, clientID: "genuine")
            XCTAssertEqual(attested.status, .ok, attested.body)
            let attestation = try XCTUnwrap(attested.json["client_attestation"] as? String)
            XCTAssertEqual(attested.json["expires_in"] as? Int, 3600)
            let header = try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(Base64URL.decode(attestation.split(separator: ".")[0])))) as? [String: Any]
            XCTAssertEqual(header?["typ"] as? String, "oauth-client-attestation+jwt")
            let body = try Self.claims(attestation)
            XCTAssertEqual(body["sub"] as? String, "genuine")
            XCTAssertEqual((body["cnf"] as? [String: Any])?["jwk"] as? [String: String], app.jwk)
            func headers(_ base: HTTPFields, jti: String = UUID().uuidString, iat: Date? = nil, audience: String? = nil, challenge: String? = nil) throws
                -> HTTPFields
            {
                app.headers(attestation, pop: try app.pop(audience: audience ?? issuer, iat: iat ?? harness.clock.now(), jti: jti, challenge: challenge), base)
            }
            // The code request names no client: the attestation names it.
            let address = "genuine@example.com"
            let requested = try await H.call(client, .post, "/api/account/native/otp/request", #"{"Email":"\#(address)"}"#, headers: try headers(H.json))
            XCTAssertEqual(requested.status, .ok, requested.body)
            let code = try await harness.code(for: address)
            let form = "grant_type=urn:cocoar:otp&client_id=genuine&username=\(address)&otp_code=\(code)&scope=openid%20email%20offline_access"
            // A PoP made for another server, or used before, is refused and spends nothing.
            Self.assertRefused(try await H.call(client, .post, "/connect/token", form, headers: try headers(H.form, audience: "https://elsewhere.example")), "invalid_client_attestation", "aud")
            let once = try headers(H.form, jti: "jti-once")
            let signedIn = try await H.call(client, .post, "/connect/token", form, headers: once)
            XCTAssertEqual(signedIn.status, .ok, signedIn.body)
            Self.assertRefused(try await H.call(client, .post, "/connect/token", form, headers: once), "invalid_client_attestation", "used before")
            // The tokens say which instance of which app they went to.
            let fact = try XCTUnwrap(try Self.claims(try XCTUnwrap(signedIn.json["access_token"] as? String))["client_attestation"] as? [String: String])
            XCTAssertEqual(fact, ["platform": "apple-app-attest", "app": AttestedApp.appleAppID, "jkt": app.thumbprint])
            let introspected = try await H.call(
                client, .post, "/connect/introspect",
                "client_id=conf&client_secret=\(harness.confidentialSecret)&token=\(try XCTUnwrap(signedIn.json["access_token"] as? String))", headers: H.form)
            XCTAssertEqual(introspected.json["client_attestation"] as? [String: String], fact, introspected.body)
            // The refresh is attested too: required means every request.
            let refresh = "grant_type=refresh_token&client_id=genuine&refresh_token=\(try XCTUnwrap(signedIn.json["refresh_token"] as? String))"
            Self.assertRefused(try await H.call(client, .post, "/connect/token", refresh, headers: H.form))
            let refreshed = try await H.call(client, .post, "/connect/token", refresh, headers: try headers(H.form))
            XCTAssertEqual(refreshed.status, .ok, refreshed.body)
            // A PoP whose iat is far off is told to sign a challenge; with one it passes.
            let stale = try await H.call(client, .post, "/connect/passkey/begin", "client_id=genuine", headers: try headers(H.form, iat: harness.clock.now() - 600))
            Self.assertRefused(stale, "use_attestation_challenge", "iat")
            let challenge = try XCTUnwrap(stale.headers[HTTPField.Name("OAuth-Client-Attestation-Challenge")!])
            let fresh = try await H.call(
                client, .post, "/connect/passkey/begin", "client_id=genuine", headers: try headers(H.form, iat: harness.clock.now() - 600, challenge: challenge))
            XCTAssertEqual(fresh.status, .ok, fresh.body)
            // Another client's attestation, and an expired one.
            Self.assertRefused(try await H.call(client, .post, "/connect/passkey/begin", "client_id=soft", headers: try headers(H.form)), "invalid_client_attestation", "another client")
            harness.clock.advance(3601)
            Self.assertRefused(try await H.call(client, .post, "/connect/passkey/begin", "client_id=genuine", headers: try headers(H.form)), "use_fresh_attestation")
        }
    }

    func testTheAppleAttesterChecksEachStepAndAssertionsMustIncrease() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge)
        let harness = self.harness!
        let app = AttestedApp(forge: forge)
        try await harness.app.test(.router) { client in
            // Another App ID, a development key for a production client, a key id that is not the key's.
            Self.assertRefused(try await app.attestWithApple(client, clientID: "genuine", appID: "ABCDE12345.test.other"), "invalid_client_attestation", "App Attest")
            var development = PlatformAttestationForge.AppAttestOptions()
            development.development = true
            Self.assertRefused(try await app.attestWithApple(client, clientID: "genuine", options: development), "invalid_client_attestation", "development")
            var otherID = PlatformAttestationForge.AppAttestOptions()
            otherID.credentialIDOverride = Array(repeating: 3, count: 32)
            Self.assertRefused(try await app.attestWithApple(client, clientID: "genuine", options: otherID), "invalid_client_attestation", "credential id")
            // The attestation by another root (a forger's own authority).
            let stranger = AttestedApp(forge: try PlatformAttestationForge())
            Self.assertRefused(try await stranger.attestWithApple(client, clientID: "genuine"), "invalid_client_attestation", "anchor")
            // A genuine key attests once; its attestation replayed finds the key taken.
            let reply1 = try await app.attestWithApple(client, clientID: "genuine")
            XCTAssertEqual(reply1.status, .ok, reply1.body)
            Self.assertRefused(try await app.attestWithApple(client, clientID: "genuine"), "invalid_client_attestation", "attested before")
            // Assertions: the counter strictly increases, and a challenge is single use.
            let challenge = try await AttestedApp.challenge(client)
            let reply2 = try await app.assertWithApple(client, clientID: "genuine", counter: 1, challenge: challenge)
            XCTAssertEqual(reply2.status, .ok, reply2.body)
            Self.assertRefused(try await app.assertWithApple(client, clientID: "genuine", counter: 2, challenge: challenge), "use_attestation_challenge", "used before")
            Self.assertRefused(try await app.assertWithApple(client, clientID: "genuine", counter: 1), "invalid_client_attestation", "counter")
            let reply3 = try await app.assertWithApple(client, clientID: "genuine", counter: 2)
            XCTAssertEqual(reply3.status, .ok, reply3.body)
            // Another client's key.
            Self.assertRefused(try await app.assertWithApple(client, clientID: "soft", counter: 3), "invalid_client_attestation", "not attested for this client")
        }
    }

    func testAndroidAttestationAndTheDPoPKeyIsTheInstanceKey() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge)
        let harness = self.harness!
        let app = AttestedApp(forge: forge)
        try await harness.app.test(.router) { client in
            let issuer = try await Self.issuer(client)
            var unlocked = PlatformAttestationForge.AndroidKeyOptions()
            unlocked.deviceLocked = false
            Self.assertRefused(try await app.attestWithAndroid(client, clientID: "genuine", options: unlocked), "invalid_client_attestation", "boot")
            var software = PlatformAttestationForge.AndroidKeyOptions()
            software.securityLevel = 0
            Self.assertRefused(try await app.attestWithAndroid(client, clientID: "genuine", options: software), "invalid_client_attestation", "secure hardware")
            let attested = try await app.attestWithAndroid(client, clientID: "genuine")
            XCTAssertEqual(attested.status, .ok, attested.body)
            let attestation = try XCTUnwrap(attested.json["client_attestation"] as? String)
            XCTAssertEqual(try Self.claims(attestation)["platform"] as? String, "android-key-attestation")
            // A DPoP proof by another key than the instance's is refused; by the instance key,
            // it stands in for the PoP and binds the tokens to the attested key.
            let discovery = try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:])
            let tokenURL = try XCTUnwrap(discovery.json["token_endpoint"] as? String)
            let address = "android@example.com"
            // ModgudClient's PoP (what an app built on it sends), by the instance key.
            var codeHeaders = H.json
            let signer = try SoftwareDPoPKey(rawRepresentation: app.instanceKey.rawRepresentation)
            for (name, value) in try ClientAttestationProof.headers(attestation: attestation, signer: signer, audience: issuer) {
                codeHeaders[HTTPField.Name(name)!] = value
            }
            let reply4 = try await H.call(client, .post, "/api/account/native/otp/request", #"{"Email":"\#(address)"}"#, headers: codeHeaders)
            XCTAssertEqual(reply4.status, .ok, reply4.body)
            let code = try await harness.code(for: address)
            let form = "grant_type=urn:cocoar:otp&client_id=genuine&username=\(address)&otp_code=\(code)&scope=openid%20email"
            let other = try DPoPProofMaker.make([[:]], htu: tokenURL, iat: Int(harness.clock.now().timeIntervalSince1970))[0].proof
            var mismatched = app.headers(attestation, pop: try app.pop(audience: issuer, iat: harness.clock.now()), H.form)
            mismatched[HTTPField.Name("DPoP")!] = other
            Self.assertRefused(try await H.call(client, .post, "/connect/token", form, headers: mismatched), "invalid_client_attestation", "DPoP key")
            var combined = H.form
            combined[HTTPField.Name("OAuth-Client-Attestation")!] = attestation
            combined[HTTPField.Name("DPoP")!] = try Self.dpopProof(app.instanceKey, jwk: app.jwk, url: tokenURL, iat: harness.clock.now())
            let bound = try await H.call(client, .post, "/connect/token", form, headers: combined)
            XCTAssertEqual(bound.status, .ok, bound.body)
            XCTAssertEqual(bound.json["token_type"] as? String, "DPoP")
            let claims = try Self.claims(try XCTUnwrap(bound.json["access_token"] as? String))
            XCTAssertEqual((claims["cnf"] as? [String: String])?["jkt"], app.thumbprint)
            XCTAssertEqual((claims["client_attestation"] as? [String: String])?["app"], AttestedApp.package)
        }
    }

    func testAnAllowedClientServesUnattestedRequestsAndChecksPresentedOnes() async throws {
        harness = try await Self.start(try PlatformAttestationForge())
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let passkeys = try await H.call(client, .post, "/connect/passkey/begin", "client_id=soft", headers: H.form)
            XCTAssertEqual(passkeys.status, .ok, passkeys.body)
            var bad = H.form
            bad[HTTPField.Name("OAuth-Client-Attestation")!] = "not.a.jwt"
            bad[HTTPField.Name("OAuth-Client-Attestation-PoP")!] = "not.a.jwt"
            Self.assertRefused(try await H.call(client, .post, "/connect/passkey/begin", "client_id=soft", headers: bad))
            // A client without attestation (`off`) ignores the headers altogether.
            let off = try await H.call(client, .post, "/connect/passkey/begin", "client_id=open", headers: bad)
            XCTAssertEqual(off.status, .ok, off.body)
            // What the operator sees before turning `required` on: one served unattested, one
            // refused; nothing for the client that is off.
            let tally = try XCTUnwrap(harness.core.clientAttestation).tally
            try await tally.flush()
            let counts = try await harness.core.administration.clients.attestationCounts(realm: "dev")
            XCTAssertEqual(counts["soft"], ClientAttestationTally.Counts(attested: 0, unattested: 1, refused: 1))
            XCTAssertNil(counts["open"])
            // Flushing adds: the table holds every flush's counts.
            _ = try await H.call(client, .post, "/connect/passkey/begin", "client_id=soft", headers: H.form)
            try await tally.flush()
            let added = try await harness.core.administration.clients.attestationCounts(realm: "dev")
            XCTAssertEqual(added["soft"]?.unattested, 2)
        }
    }

    /// ModgudClient with an `AttestedInstance` (the flow `AttestedInstance.appAttest` runs on an
    /// iPhone, its evidence made here by the test authority): attests at the attester, signs in
    /// at a `required` client over a socket, renews an expired attestation with an assertion;
    /// the same app without the attestation is refused.
    func testModgudClientAttestsItselfAndSignsInWhereAttestationIsRequired() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge, issuerScheme: "http")
        let harness = self.harness!
        let clock = harness.clock
        let appAttestKey = PlatformAttestationForge.AppAttestKey()
        let uses = Mutex<UInt32>(0)
        try await harness.app.test(.live) { server in
            let issuer = URL(string: "http://localhost:\(try XCTUnwrap(server.port))")!
            let configuration = ModgudClient.Configuration(issuer: issuer, clientID: "genuine", scope: "openid email offline_access")
            let instance = AttestedInstance(issuer: issuer, clientID: "genuine", key: SoftwareDPoPKey(), now: { clock.now() }) { hash in
                let use = uses.withLock { count in
                    defer { count += 1 }
                    return count
                }
                if use == 0 {
                    let object = try forge.appAttestation(key: appAttestKey, appID: AttestedApp.appleAppID, clientDataHash: Array(hash))
                    return .appleAttestation(keyID: Data(appAttestKey.keyID), attestationObject: Data(object))
                }
                let assertion = try forge.appAssertion(key: appAttestKey, appID: AttestedApp.appleAppID, clientDataHash: Array(hash), counter: use)
                return .appleAssertion(keyID: Data(appAttestKey.keyID), assertion: Data(assertion))
            }
            let app = ModgudClient(configuration: configuration, attestation: instance, now: { clock.now() })
            try await app.requestCode(email: "attested@example.com")
            let session = try await app.signIn(email: "attested@example.com", code: try await harness.code(for: "attested@example.com"))
            let claims = try Self.claims(session.accessToken)
            XCTAssertEqual((claims["client_attestation"] as? [String: String])?["platform"], "apple-app-attest")
            // An hour later the attestation has expired: the next request renews it with an
            // assertion (counter 1), and the refresh goes through.
            clock.advance(3601)
            let refreshed = try await app.refresh()
            XCTAssertNotEqual(refreshed.accessToken, session.accessToken)
            XCTAssertEqual(uses.withLock { $0 }, 2, "one attestation, then one assertion")
            // The same app without its attestation gets nothing: its code request names the
            // client, which refuses it at once.
            let unattested = ModgudClient(configuration: configuration, now: { clock.now() })
            do {
                try await unattested.requestCode(email: "attested@example.com")
                XCTFail("an unattested request was served")
            } catch ModgudError.oauth(let code, _, let status) {
                XCTAssertEqual(code, "invalid_client_attestation")
                XCTAssertEqual(status, 401)
            }
        }
    }

    /// A DPoP proof (RFC 9449 section 4.2) by `key`.
    static func dpopProof(_ key: P256.Signing.PrivateKey, jwk: [String: String], url: String, iat: Date) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "typ": "dpop+jwt", "jwk": jwk], options: [.sortedKeys])
        let claims = try JSONSerialization.data(
            withJSONObject: ["jti": UUID().uuidString, "htm": "POST", "htu": url, "iat": Int(iat.timeIntervalSince1970)], options: [.sortedKeys])
        let input = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(claims))
        return input + "." + Base64URL.encode(Array(try key.signature(for: Array(input.utf8)).rawRepresentation))
    }

    /// Sets `verdict[section][member]`.
    static func change(_ verdict: inout [String: Any], _ section: String, _ member: String, _ value: Any) {
        var part = verdict[section] as? [String: Any] ?? [:]
        part[member] = value
        verdict[section] = part
    }

    /// Play Integrity: verdicts decrypted and verified with the keys the app's owner set
    /// through the admin API; each of the verdict's checks refuses; the decryption key is
    /// never shown and never stored in plaintext.
    func testPlayIntegrityVerdictsAreCheckedWithTheAppOwnersKeys() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge)
        let harness = self.harness!
        let app = AttestedApp(forge: forge)
        let play = PlayIntegrityForge()
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        let keysPath = "/admin/api/realms/dev/clients/genuine/play-integrity/\(AttestedApp.package)"
        try await harness.app.test(.router) { client in
            let now = harness.clock.now()
            Self.assertRefused(try await app.attestWithPlayIntegrity(client, clientID: "genuine", play: play, at: now), "invalid_client_attestation", "no keys")
            // The admin API refuses keys that are not keys, and packages the client does not have.
            let body = #"{"DecryptionKey":"\#(play.consoleKeys.decryption)","VerificationKey":"\#(play.consoleKeys.verification)"}"#
            let notAKey = try await H.call(client, .put, keysPath, #"{"DecryptionKey":"c2hvcnQ=","VerificationKey":"\#(play.consoleKeys.verification)"}"#, headers: admin)
            XCTAssertEqual(notAKey.status, .badRequest, notAKey.body)
            let stranger = try await H.call(client, .put, "/admin/api/realms/dev/clients/genuine/play-integrity/org.other.app", body, headers: admin)
            XCTAssertEqual(stranger.status, .badRequest, stranger.body)
            let set = try await H.call(client, .put, keysPath, body, headers: admin)
            XCTAssertEqual(set.status, .ok, set.body)
            let shown = try XCTUnwrap((set.json["PlayIntegrity"] as? [[String: Any]])?.first)
            XCTAssertEqual(shown["PackageName"] as? String, AttestedApp.package)
            XCTAssertEqual(shown["VerificationKey"] as? String, play.consoleKeys.verification)
            XCTAssertFalse(set.body.contains(play.consoleKeys.decryption), "the decryption key is never shown")
            let pattern = "%\(play.consoleKeys.decryption)%"
            let stored = try await harness.core.pool.query(
                """
                SELECT (SELECT count(*) FROM events WHERE payload::text LIKE \(pattern)) + (SELECT count(*) FROM clients WHERE play_integrity::text LIKE \(pattern)),
                       (SELECT count(*) FROM events WHERE type = 'client.play_integrity_keys_set')
                """
            ).first
            XCTAssertEqual(try stored?.decode(Int.self, at: 1), 1, "the keys are an event of the client")
            XCTAssertEqual(try stored?.decode(Int.self, at: 0), 0, "the decryption key is sealed in the event and the read model")

            // Each check of the verdict, failing.
            let refusals: [(String, (inout [String: Any]) -> Void)] = [
                ("requestPackageName", { Self.change(&$0, "requestDetails", "requestPackageName", "org.other.app") }),
                ("nonce", { Self.change(&$0, "requestDetails", "nonce", "b3RoZXI") }),
                ("older than", { Self.change(&$0, "requestDetails", "timestampMillis", String(Int64(now.timeIntervalSince1970 - 301) * 1000)) }),
                ("PLAY_RECOGNIZED", { $0["appIntegrity"] = ["appRecognitionVerdict": "UNRECOGNIZED_VERSION", "packageName": AttestedApp.package] }),
                ("signing certificate", { $0["appIntegrity"] = ["appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": AttestedApp.package, "certificateSha256Digest": ["AAAA"]] }),
                ("MEETS_DEVICE_INTEGRITY", { $0["deviceIntegrity"] = ["deviceRecognitionVerdict": ["MEETS_BASIC_INTEGRITY"]] }),
            ]
            for (fragment, alter) in refusals {
                Self.assertRefused(try await app.attestWithPlayIntegrity(client, clientID: "genuine", play: play, at: now, alter: alter), "invalid_client_attestation", fragment)
            }
            // Another app owner's keys do not decrypt this app's verdicts.
            Self.assertRefused(try await app.attestWithPlayIntegrity(client, clientID: "genuine", play: PlayIntegrityForge(), at: now), "invalid_client_attestation", "decrypt")
            // A genuine verdict: a Client Attestation for the instance key, used at once.
            let attested = try await app.attestWithPlayIntegrity(client, clientID: "genuine", play: play, at: now, packageName: AttestedApp.package)
            XCTAssertEqual(attested.status, .ok, attested.body)
            let attestation = try XCTUnwrap(attested.json["client_attestation"] as? String)
            let claims = try Self.claims(attestation)
            XCTAssertEqual(claims["platform"] as? String, "play-integrity")
            XCTAssertEqual(claims["app"] as? String, AttestedApp.package)
            let issuer = try await Self.issuer(client)
            let request = try await H.call(
                client, .post, "/api/account/native/otp/request", #"{"Email":"play@example.com","ClientId":"genuine"}"#,
                headers: app.headers(attestation, pop: try app.pop(audience: issuer, iat: now), H.json))
            XCTAssertEqual(request.status, .ok, request.body)
            // Removed keys: verdicts are refused again.
            let removed = try await H.call(client, .delete, keysPath, "", headers: admin)
            XCTAssertEqual(removed.status, .ok, removed.body)
            XCTAssertEqual((removed.json["PlayIntegrity"] as? [Any])?.count, 0, removed.body)
            Self.assertRefused(try await app.attestWithPlayIntegrity(client, clientID: "genuine", play: play, at: now), "invalid_client_attestation", "no keys")
        }
    }

    /// `attestation.ip`: platform evidence costs the server a chain's signatures, so a source
    /// past its limit gets a 429 before any is verified; the challenge endpoint is not limited.
    func testTheAttesterLimitsEvidencePerSource() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await Self.start(forge)
        let harness = self.harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
            $0.rateLimitOverrides[RateLimitPolicy.attestationPerIP.name] = RateLimitSetting(limit: 2, windowSeconds: 3600, burst: 2)
        }
        let app = AttestedApp(forge: forge)
        try await harness.app.test(.router) { client in
            for _ in 0..<2 {
                let attested = try await app.attestWithAndroid(client, clientID: "genuine")
                XCTAssertEqual(attested.status, .ok, attested.body)
            }
            let limited = try await app.attestWithAndroid(client, clientID: "genuine")
            XCTAssertEqual(limited.status, .tooManyRequests, limited.body)
            XCTAssertNotNil(limited.headers[.retryAfter])
            let challenge = try await H.call(client, .post, "/connect/attestation/challenge", "", headers: [:])
            XCTAssertEqual(challenge.status, .ok, challenge.body)
        }
    }
}
