import Crypto
import Foundation
import WebAuthn
import X509
import XCTest

/// Issue 47: evidence made by a second, independent reading of the platforms' formats (Python's
/// `cryptography`, Tests/Support/platform_attestation.py, which also drives the contract test)
/// passes Modgud's verifiers, as the Swift test authorities' does: the two readings agree.
final class IndependentAttestationForgeTests: XCTestCase {
    func testPythonMadeAppAttestAndroidAndPlayIntegrityEvidenceVerifies() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attestation-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let hash = Array(SHA256.hash(data: Array("challenge.thumbprint".utf8)))
        let digest = Array(SHA256.hash(data: Array("certificate".utf8)))
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let request = #"{"folder":"\#(folder)","app_id":"ABCDE12345.org.example.app","client_data_hash":"\#(hex(hash))","package":"org.example.app","digest":"\#(hex(digest))","millis":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#
        let output = try PythonScript.run("platform_attestation.py", input: request)
        struct Made: Decodable {
            var key_id: String
            var attestation_object: String
            var chain: [String]
            var play_integrity: [String: String]
        }
        let made = try JSONDecoder().decode(Made.self, from: Data(output.utf8))
        let bytes = { (text: String) in Array(Data(base64Encoded: text)!) }
        let root = { (name: String) in try Certificate(pemEncoded: String(contentsOfFile: "\(folder)/\(name)-root.pem", encoding: .utf8)) }
        let attested = try await AppAttestVerifier(trustAnchors: [root("apple")]).verifyAttestation(
            bytes(made.attestation_object), keyID: bytes(made.key_id), clientDataHash: hash, appIDs: ["ABCDE12345.org.example.app"],
            environments: [.production])
        XCTAssertEqual(attested.appID, "ABCDE12345.org.example.app")
        XCTAssertEqual(attested.key.environment, .production)
        let android = try await AndroidKeyChainVerifier(trustAnchors: [root("google")]).verify(
            chain: made.chain.map(bytes), challenge: hash, apps: [.init(packageName: "org.example.app", signatureDigests: [digest])])
        XCTAssertEqual(android.packageName, "org.example.app")
        let play = try PlayIntegrityVerifier(
            decryptionKey: try XCTUnwrap(made.play_integrity["DecryptionKey"]), verificationKey: try XCTUnwrap(made.play_integrity["VerificationKey"]))
        let token = try XCTUnwrap(made.play_integrity["Token"])
        let verdict = try play.verify(token, nonce: Base64URL.encode(hash), packageName: "org.example.app", certificateDigests: [digest])
        XCTAssertEqual(verdict.deviceLabels, ["MEETS_DEVICE_INTEGRITY"])
        // And the Python-made evidence is refused for what it does not say.
        XCTAssertThrowsError(try play.verify(token, nonce: Base64URL.encode(hash.reversed()), packageName: "org.example.app", certificateDigests: [digest]))
        let otherApp = try? await AppAttestVerifier(trustAnchors: [root("apple")]).verifyAttestation(
            bytes(made.attestation_object), keyID: bytes(made.key_id), clientDataHash: hash, appIDs: ["ABCDE12345.org.example.other"],
            environments: [.production])
        XCTAssertNil(otherApp, "an App ID the attestation does not name")
        let otherChallenge = try? await AndroidKeyChainVerifier(trustAnchors: [root("google")]).verify(
            chain: made.chain.map(bytes), challenge: Array(hash.reversed()), apps: [.init(packageName: "org.example.app", signatureDigests: [digest])])
        XCTAssertNil(otherChallenge, "a challenge the chain does not carry")
    }
}
