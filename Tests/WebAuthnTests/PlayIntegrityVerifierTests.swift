import Crypto
import Foundation
import WebAuthn
import WebAuthnTesting
import XCTest

/// Play Integrity verdicts of classic requests, decrypted and verified locally (issue 47): a
/// token made as Google's servers make it passes, and each check has its failing case.
final class PlayIntegrityVerifierTests: XCTestCase {
    static let package = "test.modgud.app"
    static let digest = Array(SHA256.hash(data: Array("signing certificate".utf8)))
    static let nonce = Base64URL.encode(Array(SHA256.hash(data: Array("challenge.thumbprint".utf8))))

    func verify(_ forge: PlayIntegrityForge, _ change: (inout [String: Any]) -> Void = { _ in }, keysOf keys: PlayIntegrityForge? = nil, now: Date = Date())
        throws -> PlayIntegrityVerifier.Verdict
    {
        var verdict = PlayIntegrityForge.verdict(packageName: Self.package, nonce: Self.nonce, certificateDigest: Self.digest, at: now)
        change(&verdict)
        let console = (keys ?? forge).consoleKeys
        return try PlayIntegrityVerifier(decryptionKey: console.decryption, verificationKey: console.verification).verify(
            try forge.token(verdict), nonce: Self.nonce, packageName: Self.package, certificateDigests: [Self.digest], now: now)
    }

    func testAGenuineVerdictPassesAndEachCheckHasItsFailure() async throws {
        let forge = PlayIntegrityForge()
        let verdict = try verify(forge)
        XCTAssertEqual(verdict.packageName, Self.package)
        XCTAssertEqual(verdict.deviceLabels, ["MEETS_DEVICE_INTEGRITY"])
        func refused(_ fragment: String, _ change: @escaping (inout [String: Any]) -> Void, line: UInt = #line) async {
            await PlatformAttestationVectorTests.assertRefused(try verify(forge, change), fragment, line: line)
        }
        let millis = String(Int64(Date().timeIntervalSince1970 * 1000))
        await refused("requestPackageName") { $0["requestDetails"] = ["requestPackageName": "com.other", "nonce": Self.nonce, "timestampMillis": millis] }
        await refused("nonce") { $0["requestDetails"] = ["requestPackageName": Self.package, "nonce": "another", "timestampMillis": millis] }
        await refused("older") { $0["requestDetails"] = ["requestPackageName": Self.package, "nonce": Self.nonce, "timestampMillis": String(Int64((Date().timeIntervalSince1970 - 900) * 1000))] }
        await refused("PLAY_RECOGNIZED") { $0["appIntegrity"] = ["appRecognitionVerdict": "UNRECOGNIZED_VERSION", "packageName": Self.package, "certificateSha256Digest": [Base64URL.encode(Self.digest)]] }
        await refused("signing certificate") { $0["appIntegrity"] = ["appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": Self.package, "certificateSha256Digest": [Base64URL.encode([UInt8](repeating: 1, count: 32))]] }
        await refused("MEETS_DEVICE_INTEGRITY") { $0["deviceIntegrity"] = ["deviceRecognitionVerdict": ["MEETS_BASIC_INTEGRITY"]] }
        await refused("MEETS_DEVICE_INTEGRITY") { $0["deviceIntegrity"] = [:] }
        // Another app's keys: the token neither decrypts nor verifies.
        await PlatformAttestationVectorTests.assertRefused(try verify(forge, keysOf: PlayIntegrityForge()), "decrypt")
        // A token signed by someone else but encrypted to this app's key.
        let forger = PlayIntegrityForge()
        let console = forge.consoleKeys
        let mixed = try PlayIntegrityVerifier(decryptionKey: console.decryption, verificationKey: forger.consoleKeys.verification)
        await PlatformAttestationVectorTests.assertRefused(
            try mixed.verify(
                try forge.token(PlayIntegrityForge.verdict(packageName: Self.package, nonce: Self.nonce, certificateDigest: Self.digest, at: Date())),
                nonce: Self.nonce, packageName: Self.package, certificateDigests: [Self.digest]), "verification key")
        // Not a JWE at all, and a JWE of another algorithm.
        let verifier = try PlayIntegrityVerifier(decryptionKey: console.decryption, verificationKey: console.verification)
        await PlatformAttestationVectorTests.assertRefused(try verifier.verify("a.b.c", nonce: Self.nonce, packageName: Self.package, certificateDigests: []), "JWE")
        let token = try forge.token(PlayIntegrityForge.verdict(packageName: Self.package, nonce: Self.nonce, certificateDigest: Self.digest, at: Date()))
        let otherAlgorithm = Base64URL.encode(Array(#"{"alg":"dir","enc":"A256GCM"}"#.utf8)) + token.drop { $0 != "." }
        await PlatformAttestationVectorTests.assertRefused(
            try verifier.verify(otherAlgorithm, nonce: Self.nonce, packageName: Self.package, certificateDigests: [Self.digest]), "A256KW")
    }

    func testTheConsoleKeysMustBeKeys() async {
        XCTAssertThrowsError(try PlayIntegrityVerifier(decryptionKey: "c2hvcnQ=", verificationKey: PlayIntegrityForge().consoleKeys.verification))
        XCTAssertThrowsError(try PlayIntegrityVerifier(decryptionKey: PlayIntegrityForge().consoleKeys.decryption, verificationKey: "bm90IGEga2V5"))
    }
}
