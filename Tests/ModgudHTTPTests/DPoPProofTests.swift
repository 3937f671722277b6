import Foundation
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 29: DPoP proofs made by PyJWT (`Tests/Support/make_dpop_proofs.py`), checked by
/// `DPoPVerifier` step for step (RFC 9449 section 4.3), each refusal on its own.
final class DPoPProofTests: XCTestCase {
    var database: TestDatabase!
    let url = "https://login.acme.test/connect/token"
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let masterKey = [UInt8](repeating: 5, count: 32)

    override func tearDown() async throws {
        await database?.drop()
    }

    func proofs(_ specs: [[String: Any]]) throws -> [(proof: String, jkt: String)] {
        try DPoPProofMaker.make(specs, htu: url, iat: Int(now.timeIntervalSince1970)).map { ($0.proof, $0.jkt) }
    }

    func verifier(_ pool: PQPool? = nil, key: [UInt8]? = nil) -> DPoPVerifier {
        DPoPVerifier(pool: pool ?? database.pool, nonces: DPoPNonces(masterKey: key ?? masterKey))
    }

    func refusal(_ proof: String, method: String = "POST", url: String? = nil, accessToken: String? = nil, requireNonce: Bool = false) async
        -> DPoPError?
    {
        do {
            _ = try await verifier().verify(proof, method: method, url: url ?? self.url, accessToken: accessToken, now: now, requireNonce: requireNonce)
            return nil
        } catch let error as DPoPError {
            return error
        } catch {
            XCTFail("\(error)")
            return nil
        }
    }

    func testValidProofsOfBothAlgorithmsAndTheirThumbprints() async throws {
        database = try await TestDatabase.create()
        let made = try proofs([["alg": "ES256"], ["alg": "EdDSA"], ["htu": "HTTPS://LOGIN.acme.test:443/connect/token?x=1#f"]])
        for (proof, jkt) in made {
            let verified = try await verifier().verify(proof, method: "POST", url: url, now: now)
            XCTAssertEqual(verified.key.thumbprint, jkt, "RFC 7638 thumbprint as PyJWT's side computes it")
        }
    }

    func testEachMalformedOrMismatchedProofIsRefused() async throws {
        database = try await TestDatabase.create()
        let made = try proofs([
            ["htu": "https://login.acme.test/connect/other"], ["htm": "GET"], ["typ": "JWT"], ["header_alg": "HS256"], ["header_alg": "none"],
            ["private_jwk": true], ["alg": "EdDSA", "header_alg": "ES256"], ["htu": "http://login.acme.test/connect/token"],
        ])
        let reasons = ["htu", "htm", "typ", "alg", "alg", "private", "jwk", "htu"]
        for ((proof, _), reason) in zip(made, reasons) {
            guard case .invalid(let detail) = await refusal(proof) else { XCTFail("accepted: \(reason)"); continue }
            XCTAssertTrue(detail.contains(reason), "\(reason): \(detail)")
        }
        var tampered = made[0].proof
        tampered.removeLast(2)
        tampered += "AA"
        guard case .invalid = await refusal(tampered) else { return XCTFail("a bad signature passed") }
        for garbage in ["", "a.b", "a.b.c", String(repeating: "A", count: 5000)] {
            guard case .invalid = await refusal(garbage) else { return XCTFail("garbage passed: \(garbage.prefix(20))") }
        }
    }

    func testAReplayedJTIIsRefusedOnceUsedEvenByAnotherInstance() async throws {
        database = try await TestDatabase.create(maxConnections: 10)
        let proof = try proofs([[:]])[0].proof
        let other = database.makePool(maxConnections: 4)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                let verifier = verifier(index.isMultiple(of: 2) ? database.pool : other)
                let now = self.now
                let url = self.url
                group.addTask { (try? await verifier.verify(proof, method: "POST", url: url, now: now)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        await other.close()
        XCTAssertEqual(outcomes.filter { $0 }.count, 1, "exactly one instance accepts the proof")
        let again = await refusal(proof)
        XCTAssertEqual(again, .replayed)
    }

    func testAStaleClockIsToldItsOffsetAndANonceSettlesIt() async throws {
        database = try await TestDatabase.create()
        let seconds = Int(now.timeIntervalSince1970)
        let nonce = DPoPNonces(masterKey: masterKey).current(now: Int64(seconds))
        let foreign = DPoPNonces(masterKey: [UInt8](repeating: 6, count: 32)).current(now: Int64(seconds))
        let made = try proofs([["iat": seconds - 600], ["iat": seconds - 600, "nonce": nonce], ["nonce": foreign], [:], ["iat": seconds + 30]])
        guard case .useNonce(let detail) = await refusal(made[0].proof) else { return XCTFail("a 10-minute-old iat passed") }
        XCTAssertTrue(detail.contains("600 s behind"), detail)
        let withNonce = await refusal(made[1].proof)
        XCTAssertNil(withNonce, "the server's nonce makes the proof fresh whatever the client's clock says")
        guard case .useNonce = await refusal(made[2].proof) else { return XCTFail("another deployment's nonce passed") }
        guard case .useNonce = await refusal(made[3].proof, requireNonce: true) else { return XCTFail("a client that requires nonces took none") }
        let slightlyAhead = await refusal(made[4].proof)
        XCTAssertNil(slightlyAhead, "within the window")
    }

    func testAthBindsTheProofToTheAccessToken() async throws {
        database = try await TestDatabase.create()
        let made = try proofs([["htm": "GET", "access_token": "token-one"], ["htm": "GET", "access_token": "token-one"]])
        let matching = await refusal(made[0].proof, method: "GET", accessToken: "token-one")
        XCTAssertNil(matching)
        guard case .invalid(let detail) = await refusal(made[1].proof, method: "GET", accessToken: "token-two") else { return XCTFail("ath of another token passed") }
        XCTAssertTrue(detail.contains("ath"), detail)
    }

    func testNoncesLastTheirSlotAndTheNext() {
        let nonces = DPoPNonces(masterKey: masterKey, slot: 300)
        let issued = nonces.current(now: 1_800_000_000)
        XCTAssertTrue(nonces.accepts(issued, now: 1_800_000_000))
        XCTAssertTrue(nonces.accepts(issued, now: 1_800_000_000 + 300), "the next slot still takes it")
        XCTAssertFalse(nonces.accepts(issued, now: 1_800_000_000 + 600), "two slots on it is stale")
        XCTAssertFalse(DPoPNonces(masterKey: [UInt8](repeating: 1, count: 32)).accepts(issued, now: 1_800_000_000), "another key")
    }
}
