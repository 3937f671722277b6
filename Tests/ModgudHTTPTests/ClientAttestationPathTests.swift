import Foundation
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import X509
import XCTest

/// Issue 66 at the attester's endpoint: chains from the forged-chain corpus (Tests/ForgedChains)
/// posted to `/connect/attestation/android` as an app would. A forged path is refused, and its
/// reason reaches the metrics (`modgud_certificate_path_refusals_total{format, reason}`); a
/// serial on the status list the operator imported is refused as revoked; until an import,
/// the shipped list applies.
final class ClientAttestationPathTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    struct CorpusCase: Decodable {
        var chain: [String]
        var anchors: [String]
    }

    static func corpus(_ name: String) throws -> CorpusCase {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("ForgedChains")
        return try JSONDecoder().decode(CorpusCase.self, from: Data(contentsOf: folder.appendingPathComponent("\(name).json")))
    }

    static func refusals(_ reason: PathRefusal.Reason) -> Int {
        let prefix = #"modgud_certificate_path_refusals_total{format="android-key-attestation",reason="\#(reason.rawValue)"} "#
        let line = MetricsExposition.registry.emitToString().split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    func testForgedPathsAreRefusedWithTheirReasonAndTheImportedStatusListApplies() async throws {
        let genuine = try Self.corpus("android-genuine")
        let root = try Certificate(derEncoded: Array(try XCTUnwrap(Data(base64Encoded: genuine.anchors[0]))))
        harness = try await EmailSignInHarness(attestationRoots: AttestationRoots(apple: [], google: [root]))
        let harness = self.harness!
        var settings = ClientSettings(
            type: .public, grants: [.otp, .refreshToken], allowedScopes: ClientAttestationTests.scopes,
            androidApps: [AndroidApp(packageName: AttestedApp.package, sha256Fingerprints: [AndroidApp.fingerprintText(AttestedApp.signingDigest)])])
        settings.clientAttestation = .required
        _ = try await harness.core.administration.clients.create(realm: "dev", id: "genuine", settings: settings, metadata: .init())
        let app = AttestedApp(forge: try PlatformAttestationForge())
        _ = MetricsExposition.registry
        try await harness.app.test(.router) { client in
            func post(_ name: String) async throws -> H.Reply {
                let challenge = try await AttestedApp.challenge(client)
                return try await AttestedApp.post(
                    client, "/connect/attestation/android",
                    ["client_id": "genuine", "certificate_chain": try Self.corpus(name).chain, "challenge": challenge, "jwk": app.jwk])
            }
            // A leaf issued by a key that is not a CA: what any device owner can mint.
            let notCA = Self.refusals(.issuerNotCA)
            let minted = try await post("android-leaf-issued-by-non-ca")
            ClientAttestationTests.assertRefused(minted, "invalid_client_attestation", "issuer_not_ca")
            XCTAssertEqual(Self.refusals(.issuerNotCA), notCA + 1, "the refusal is counted with its reason")
            let withoutPurpose = Self.refusals(.attestKeyWithoutPurpose)
            ClientAttestationTests.assertRefused(try await post("android-attest-key-without-purpose"), "invalid_client_attestation", "attest_key_without_purpose")
            XCTAssertEqual(Self.refusals(.attestKeyWithoutPurpose), withoutPurpose + 1)
            // The genuine path passes the validator, and the verifier goes on to the challenge
            // (the corpus leaf carries its own): not a path refusal, so not counted as one.
            let before = PathRefusal.Reason.allCases.map(Self.refusals)
            ClientAttestationTests.assertRefused(try await post("android-genuine"), "invalid_client_attestation", "attestationChallenge")
            XCTAssertEqual(PathRefusal.Reason.allCases.map(Self.refusals), before)
            // The operator imports a status list naming the genuine intermediate: refused as revoked.
            let intermediate = try Certificate(derEncoded: Array(try XCTUnwrap(Data(base64Encoded: genuine.chain[1]))))
            let list = try AndroidAttestationStatusList(
                json: Array(#"{"entries": {"\#(RevokedSerials.hex(intermediate.serialNumber).uppercased())": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}}"#.utf8))
            try await AndroidAttestationStatusTable.replace(with: list, now: Date(), pool: harness.core.pool)
            let revoked = Self.refusals(.revoked)
            ClientAttestationTests.assertRefused(try await post("android-genuine"), "invalid_client_attestation", "revoked")
            XCTAssertEqual(Self.refusals(.revoked), revoked + 1)
            let summary = try await AndroidAttestationStatusTable.summary(pool: harness.core.pool)
            XCTAssertEqual(summary.source, "imported")
            XCTAssertEqual(summary.entries, 1)
            XCTAssertEqual(summary.sha256, list.sha256)
            // An import that no longer names it lets the chain's path pass again.
            try await AndroidAttestationStatusTable.replace(with: try AndroidAttestationStatusList(json: Array(#"{"entries": {}}"#.utf8)), now: Date(), pool: harness.core.pool)
            ClientAttestationTests.assertRefused(try await post("android-genuine"), "invalid_client_attestation", "attestationChallenge")
        }
    }

    func testTheStatusListReadsGooglesFormatAndRefusesWhatItCannotRead() throws {
        let list = try AndroidAttestationStatusList(
            json: Array(
                #"{"entries": {"00C8966FCB2FBB0D7A": {"status": "SUSPENDED", "reason": "SOFTWARE_FLAW", "comment": "c", "expires": "2030-01-01"}, "2c8cdd": {"status": "REVOKED"}, "abc": {"status": "OK"}}}"#
                    .utf8))
        XCTAssertEqual(list.entries.map(\.serial), ["c8966fcb2fbb0d7a", "2c8cdd"], "normalised, in the file's key order")
        XCTAssertEqual(list.revokedSerials.count, 2, "REVOKED and SUSPENDED are refused, other statuses are not")
        for malformed in [#"[]"#, #"{"entries": []}"#, #"{"entries": {"xyz": {"status": "REVOKED"}}}"#, #"{"entries": {"12": {}}}"#, "not json"] {
            XCTAssertThrowsError(try AndroidAttestationStatusList(json: Array(malformed.utf8)), malformed)
        }
        XCTAssertNotNil(AndroidAttestationStatusList.shipped.sha256, "the shipped list parses")
    }
}
