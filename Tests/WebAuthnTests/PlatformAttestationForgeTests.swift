import Crypto
import Foundation
import WebAuthn
import WebAuthnTesting
import X509
import XCTest

/// The test authorities' evidence passes the verifiers that pass real devices' output
/// (`PlatformAttestationVectorTests`), and each field the forge can vary is refused: the
/// checks the real vectors cannot reach (a counter that is not zero, a certified nonce over
/// other data, a software key, a failed boot) have their failing case here.
final class PlatformAttestationForgeTests: XCTestCase {
    static let appID = "ABCDE12345.test.modgud.app"
    let hash = Array(SHA256.hash(data: Array("challenge.thumbprint".utf8)))

    func testAForgedAppAttestationVerifiesAndEachVariationIsRefused() async throws {
        let forge = try PlatformAttestationForge()
        let verifier = AppAttestVerifier(trustAnchors: [forge.apple.root])
        let key = PlatformAttestationForge.AppAttestKey()
        func verify(_ options: PlatformAttestationForge.AppAttestOptions, environments: Set<AppAttestVerifier.Environment> = [.production]) async throws {
            _ = try await verifier.verifyAttestation(
                forge.appAttestation(key: key, appID: Self.appID, clientDataHash: hash, options: options), keyID: key.keyID, clientDataHash: hash,
                appIDs: [Self.appID], environments: environments)
        }
        try await verify(.init())
        var counter = PlatformAttestationForge.AppAttestOptions()
        counter.counter = 1
        await PlatformAttestationVectorTests.assertRefused(try await verify(counter), "counter")
        var nonce = PlatformAttestationForge.AppAttestOptions()
        nonce.nonceOverride = Array(repeating: 1, count: 32)
        await PlatformAttestationVectorTests.assertRefused(try await verify(nonce), "nonce")
        var credential = PlatformAttestationForge.AppAttestOptions()
        credential.credentialIDOverride = Array(repeating: 2, count: 32)
        await PlatformAttestationVectorTests.assertRefused(try await verify(credential), "credential id")
        var development = PlatformAttestationForge.AppAttestOptions()
        development.development = true
        await PlatformAttestationVectorTests.assertRefused(try await verify(development), "development")
        try await verify(development, environments: [.production, .development])
        // Another authority's chain (a real device's root is not the test root, and vice versa).
        let other = try PlatformAttestationForge()
        await PlatformAttestationVectorTests.assertRefused(
            try await AppAttestVerifier(trustAnchors: [other.apple.root]).verifyAttestation(
                forge.appAttestation(key: key, appID: Self.appID, clientDataHash: hash), keyID: key.keyID, clientDataHash: hash, appIDs: [Self.appID],
                environments: [.production]), "anchor")
    }

    func testAForgedAssertionVerifiesWithItsCounter() async throws {
        let forge = try PlatformAttestationForge()
        let key = PlatformAttestationForge.AppAttestKey()
        let assertion = try forge.appAssertion(key: key, appID: Self.appID, clientDataHash: hash, counter: 7)
        XCTAssertEqual(try AppAttestVerifier.verifyAssertion(assertion, clientDataHash: hash, publicKey: key.privateKey.publicKey, appID: Self.appID), 7)
    }

    func testAForgedAndroidChainVerifiesAndEachVariationIsRefused() async throws {
        let forge = try PlatformAttestationForge()
        let key = P256.Signing.PrivateKey().publicKey
        let digest = Array(SHA256.hash(data: Array("signing certificate".utf8)))
        let app = AndroidKeyChainVerifier.App(packageName: "test.modgud.app", signatureDigests: [digest])
        let verifier = AndroidKeyChainVerifier(trustAnchors: [forge.google.root])
        func verify(_ options: PlatformAttestationForge.AndroidKeyOptions) async throws -> AndroidKeyChainVerifier.Verified {
            try await verifier.verify(
                chain: forge.androidChain(key: key, challenge: hash, packageName: "test.modgud.app", signatureDigest: digest, options: options),
                challenge: hash, apps: [app])
        }
        let verified = try await verify(.init())
        XCTAssertEqual(P256.Signing.PublicKey(verified.publicKey)?.rawRepresentation, key.rawRepresentation)
        var software = PlatformAttestationForge.AndroidKeyOptions()
        software.securityLevel = 0
        await PlatformAttestationVectorTests.assertRefused(try await verify(software), "secure hardware")
        var failed = PlatformAttestationForge.AndroidKeyOptions()
        failed.verifiedBootState = 3
        await PlatformAttestationVectorTests.assertRefused(try await verify(failed), "boot")
    }
}
