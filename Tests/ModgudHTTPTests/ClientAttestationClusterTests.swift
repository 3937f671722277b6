import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PostgresTestSupport
import AsyncTestSupport
import WebAuthnTesting
import XCTest

/// Issue 47 across instances: two instances on one database, each with its own caches (an hour
/// long, so only the settings channel can tell them), requests alternating between them. A
/// client switched to `required` on one instance is refused on the other as soon as the switch
/// is answered; an attestation the one issued is accepted by the other; a PoP spent on one is
/// spent on both.
final class ClientAttestationClusterTests: XCTestCase {
    typealias H = EmailSignInHarness

    func testRequiredOnOneInstanceHoldsOnTheOtherAndAPoPIsSpentOnBoth() async throws {
        let forge = try PlatformAttestationForge()
        let database = try await TestDatabase.create(maxConnections: 40)
        let pools = [database.pool, database.makePool(maxConnections: 10)]
        let roots = AttestationRoots(apple: [forge.apple.root], google: [forge.google.root])
        let cores = try pools.map {
            try ModgudCore(pool: $0, masterKey: Array(repeating: 3, count: 32), settingsMaxAge: .seconds(3600), attestationRoots: roots)
        }
        let listeners = try await SettingsListeners.start(pools, cores)
        let (a, b) = (cores[0].administration, cores[1].administration)
        _ = try await a.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true)), metadata: .init())
        try await cores[0].keys.rotate(realm: "dev", now: Date(), metadata: .init())
        var settings = ClientSettings(
            type: .public, grants: [.passkey, .refreshToken], allowedScopes: ["openid"],
            androidApps: [AndroidApp(packageName: AttestedApp.package, sha256Fingerprints: [AndroidApp.fingerprintText(AttestedApp.signingDigest)])])
        settings.clientAttestation = .allowed
        settings.rpID = "acme.test"
        _ = try await a.clients.create(realm: "dev", id: "app", settings: settings, metadata: .init())
        let app = AttestedApp(forge: forge)
        try await buildApplication(core: cores[0]).test(.router) { onA in
            try await buildApplication(core: cores[1]).test(.router) { onB in
                func begin(_ client: some TestClientProtocol, _ headers: HTTPFields = H.form) async throws -> H.Reply {
                    try await H.call(client, .post, "/connect/passkey/begin", "client_id=app", headers: headers)
                }
                // `allowed`: B serves a script (and warms its cache of the client for an hour).
                let served = try await begin(onB)
                XCTAssertEqual(served.status, .ok, served.body)
                // A switches the client to `required`; B refuses the script at once, A too.
                _ = try await a.clients.update(realm: "dev", id: "app", metadata: .init()) { $0.clientAttestation = .required }
                let refusedOnB = try await begin(onB)
                XCTAssertEqual(refusedOnB.status, .unauthorized, refusedOnB.body)
                let refusedOnA = try await begin(onA)
                XCTAssertEqual(refusedOnA.status, .unauthorized, refusedOnA.body)
                // An instance attested on A is served on B, and its PoP, spent on B, is refused on A.
                let attested = try await app.attestWithAndroid(onA, clientID: "app")
                let attestation = try XCTUnwrap(attested.json["client_attestation"] as? String, attested.body)
                let issuer = try await ClientAttestationTests.issuer(onA)
                let pop = try app.pop(audience: issuer, iat: Date())
                let attestedOnB = try await begin(onB, app.headers(attestation, pop: pop, H.form))
                XCTAssertEqual(attestedOnB.status, .ok, attestedOnB.body)
                let replayedOnA = try await begin(onA, app.headers(attestation, pop: pop, H.form))
                XCTAssertEqual(replayedOnA.status, .unauthorized, replayedOnA.body)
                XCTAssertTrue(replayedOnA.body.contains("used before"), replayedOnA.body)
                let freshOnA = try await begin(onA, app.headers(attestation, pop: try app.pop(audience: issuer, iat: Date()), H.form))
                XCTAssertEqual(freshOnA.status, .ok, freshOnA.body)
                // B turns it off again; A serves the script at once.
                _ = try await b.clients.update(realm: "dev", id: "app", metadata: .init()) { $0.clientAttestation = .off }
                let servedOnA = try await begin(onA)
                XCTAssertEqual(servedOnA.status, .ok, servedOnA.body)
            }
        }
        // Both instances' counts, in one table.
        for core in cores { try await XCTUnwrap(core.clientAttestation).tally.flush() }
        let counts = try await a.clients.attestationCounts(realm: "dev")["app"]
        XCTAssertEqual(counts, ClientAttestationTally.Counts(attested: 2, unattested: 1, refused: 3))
        for listener in listeners { listener.cancel() }
        await pools[1].close()
        await database.drop()
    }
}
