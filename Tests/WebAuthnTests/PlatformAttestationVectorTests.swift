import Crypto
import Foundation
import WebAuthn
import X509
import XCTest

/// Apple App Attest and Android key attestation verified with real devices' output (issue 47):
/// `Vectors/app-attest.json` and `Vectors/android-key-chains.json`, checked against the
/// platforms' published roots at the instant each was made. Each check has its failing case.
final class PlatformAttestationVectorTests: XCTestCase {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")

    struct AppAttestVector: Decodable {
        var name: String
        var environment: String
        var appID: String
        var keyIdBase64: String
        var clientDataHashSha256Base64: String
        var validateAt: String
        var attestationObjectBase64: String
        var assertion: Assertion

        struct Assertion: Decodable {
            var assertionBase64: String
            var clientDataHashSha256Base64: String
            var counter: UInt32
        }
    }

    struct AndroidChain: Decodable {
        var name: String
        var validateAt: String
        var chainDerBase64: [String]
        var challengeUtf8: String
        var package: String
        var signatureDigestHex: String
        var verifiedBootState: String
    }

    static func appAttestVectors() throws -> [AppAttestVector] {
        struct File: Decodable { var vectors: [AppAttestVector] }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: folder.appendingPathComponent("app-attest.json"))).vectors
    }

    static func androidChains() throws -> [AndroidChain] {
        struct File: Decodable { var chains: [AndroidChain] }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: folder.appendingPathComponent("android-key-chains.json"))).chains
    }

    static func date(_ text: String) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        return try XCTUnwrap(ISO8601DateFormatter().date(from: text))
    }

    static func bytes(_ base64: String) throws -> [UInt8] { try XCTUnwrap(Data(base64Encoded: base64).map(Array.init)) }

    static let appleRoots = PlatformAttestationRoots.apple.compactMap { try? Certificate(pemEncoded: $0) }
    static let googleRoots = PlatformAttestationRoots.google.compactMap { try? Certificate(pemEncoded: $0) }

    func testThePublishedRootsParse() async {
        XCTAssertEqual(Self.appleRoots.count, 1)
        XCTAssertEqual(Self.googleRoots.count, 5)
    }

    // MARK: App Attest

    private func verify(
        _ vector: AppAttestVector, objectBytes: [UInt8]? = nil, clientDataHash: [UInt8]? = nil, keyID: [UInt8]? = nil, appIDs: Set<String>? = nil,
        environments: Set<AppAttestVerifier.Environment> = [.production, .development], roots: [Certificate] = appleRoots, at time: Date? = nil
    ) async throws -> AppAttestVerifier.AttestedKey {
        let verifier = AppAttestVerifier(trustAnchors: roots, verificationTime: try time ?? Self.date(vector.validateAt))
        return try await verifier.verifyAttestation(
            objectBytes ?? Self.bytes(vector.attestationObjectBase64), keyID: keyID ?? Self.bytes(vector.keyIdBase64),
            clientDataHash: clientDataHash ?? Self.bytes(vector.clientDataHashSha256Base64), appIDs: appIDs ?? [vector.appID], environments: environments
        ).key
    }

    func testRealAttestationsVerifyAndTheirAssertionsToo() async throws {
        for vector in try Self.appAttestVectors() {
            let key = try await verify(vector)
            XCTAssertEqual(key.environment.rawValue, vector.environment, vector.name)
            XCTAssertEqual(key.keyID, try Self.bytes(vector.keyIdBase64))
            let counter = try AppAttestVerifier.verifyAssertion(
                Self.bytes(vector.assertion.assertionBase64), clientDataHash: Self.bytes(vector.assertion.clientDataHashSha256Base64),
                publicKey: key.publicKey, appID: vector.appID)
            XCTAssertEqual(counter, vector.assertion.counter, vector.name)
        }
    }

    func testEachAttestationCheckHasItsFailure() async throws {
        let vectors = try Self.appAttestVectors()
        let development = try XCTUnwrap(vectors.first { $0.environment == "development" })
        let production = try XCTUnwrap(vectors.first { $0.environment == "production" })
        // Step 1: another root; or the right root today, when the three-day leaf has expired.
        let otherRoot = Self.googleRoots
        await Self.assertRefused(try await verify(production, roots: otherRoot), "no_path_to_trust_anchor")
        await Self.assertRefused(try await verify(production, at: Date()), "outside_validity")
        // Steps 2–4: another client data hash (a replayed or foreign challenge).
        await Self.assertRefused(try await verify(production, clientDataHash: Array(SHA256.hash(data: Array("another challenge".utf8)))), "nonce")
        // Step 5: a key id that is not the certificate key's hash.
        await Self.assertRefused(try await verify(production, keyID: [UInt8](repeating: 7, count: 32)), "key id")
        // Step 6: another App ID.
        await Self.assertRefused(try await verify(production, appIDs: ["8YE23NZS57.com.example.other"]), "rpIdHash")
        // Step 8: a development key where only production is accepted.
        await XCTAssertThrowsErrorAsync(try await verify(development, environments: [.production])) { error in
            XCTAssertTrue("\(error)".contains("development"), "\(error)")
        }
        // Tampered authenticator data: one byte of the counter field changed.
        var object = try Self.bytes(production.attestationObjectBase64)
        let authData = try XCTUnwrap(Self.range(ofAuthDataIn: object))
        object[authData.lowerBound + 36] ^= 0x01
        await Self.assertRefused(try await verify(production, objectBytes: object), "nonce")
    }

    func testEachAssertionCheckHasItsFailure() async throws {
        let vector = try XCTUnwrap(Self.appAttestVectors().first)
        let key = try await verify(vector)
        let assertion = try Self.bytes(vector.assertion.assertionBase64)
        let hash = try Self.bytes(vector.assertion.clientDataHashSha256Base64)
        XCTAssertThrowsError(
            try AppAttestVerifier.verifyAssertion(assertion, clientDataHash: Array(SHA256.hash(data: [1])), publicKey: key.publicKey, appID: vector.appID))
        XCTAssertThrowsError(
            try AppAttestVerifier.verifyAssertion(assertion, clientDataHash: hash, publicKey: P256.Signing.PrivateKey().publicKey, appID: vector.appID))
        XCTAssertThrowsError(try AppAttestVerifier.verifyAssertion(assertion, clientDataHash: hash, publicKey: key.publicKey, appID: "X.other"))
        var tampered = assertion
        tampered[tampered.count - 1] ^= 0x01  // the counter's last byte
        XCTAssertThrowsError(try AppAttestVerifier.verifyAssertion(tampered, clientDataHash: hash, publicKey: key.publicKey, appID: vector.appID))
    }

    /// Where the `authData` byte string starts and ends in an attestation object.
    static func range(ofAuthDataIn object: [UInt8]) -> Range<Int>? {
        let label = Array("authData".utf8)
        guard let start = (0...(object.count - label.count)).first(where: { Array(object[$0..<($0 + label.count)]) == label }) else { return nil }
        var offset = start + label.count
        // A byte string header: 0x58 (1-byte length) or 0x59 (2-byte length).
        let length: Int
        switch object[offset] {
        case 0x58: length = Int(object[offset + 1]); offset += 2
        case 0x59: length = Int(object[offset + 1]) << 8 | Int(object[offset + 2]); offset += 3
        default: return nil
        }
        return offset..<(offset + length)
    }

    /// The expression throws, and its error names the check (`fragment`), so a case cannot
    /// pass by failing an earlier check.
    static func assertRefused<T>(_ expression: @autoclosure () async throws -> T, _ fragment: String, line: UInt = #line) async {
        await XCTAssertThrowsErrorAsync(try await expression(), line: line) { error in
            XCTAssertTrue("\(error)".contains(fragment), "expected a refusal mentioning '\(fragment)', got \(error)", line: line)
        }
    }

    // MARK: Android key attestation

    private func verify(
        _ chain: AndroidChain, challenge: String? = nil, package: String? = nil, digest: String? = nil, roots: [Certificate] = googleRoots
    ) async throws -> AndroidKeyChainVerifier.Verified {
        let app = AndroidKeyChainVerifier.App(
            packageName: package ?? chain.package, signatureDigests: [Self.hex(digest ?? chain.signatureDigestHex)])
        return try await AndroidKeyChainVerifier(trustAnchors: roots, verificationTime: Self.date(chain.validateAt)).verify(
            chain: chain.chainDerBase64.map(Self.bytes), challenge: Array((challenge ?? chain.challengeUtf8).utf8), apps: [app])
    }

    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }
    }

    func testRealChainsOfLockedDevicesVerify() async throws {
        let chains = try Self.androidChains().filter { $0.verifiedBootState == "VERIFIED" }
        XCTAssertEqual(chains.count, 2)
        for chain in chains {
            let verified = try await verify(chain)
            XCTAssertEqual(verified.packageName, chain.package, chain.name)
            XCTAssertEqual(verified.securityLevel, .trustedEnvironment, chain.name)
        }
    }

    func testEachAndroidCheckHasItsFailure() async throws {
        let chains = try Self.androidChains()
        let good = try XCTUnwrap(chains.first { $0.verifiedBootState == "VERIFIED" })
        await Self.assertRefused(try await verify(good, roots: Self.appleRoots), "anchor")  // wrong root
        await Self.assertRefused(try await verify(good, challenge: "another challenge"), "attestationChallenge")  // not our challenge
        await Self.assertRefused(try await verify(good, package: "com.example.other"), "package")  // wrong package
        await Self.assertRefused(try await verify(good, digest: String(repeating: "ab", count: 32)), "signing certificate")  // wrong signing certificate
        // An unlocked bootloader with an unverified boot (a Pixel 3 on its factory keys).
        let unlocked = try XCTUnwrap(chains.first { $0.verifiedBootState == "UNVERIFIED" })
        await XCTAssertThrowsErrorAsync(try await verify(unlocked)) { error in XCTAssertTrue("\(error)".contains("boot"), "\(error)") }
        // A chain that leaves out its intermediate does not reach the root.
        var broken = good
        broken.chainDerBase64.remove(at: 1)
        await Self.assertRefused(try await verify(broken), "chain")
    }
}
