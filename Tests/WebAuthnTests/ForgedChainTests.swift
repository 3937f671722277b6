import Foundation
import WebAuthn
import X509
import XCTest

/// The forged-chain corpus (Tests/ForgedChains, made by Tests/Support/forged_chains.py with the
/// `cryptography` package): every chain a device owner or attacker can build is refused for its
/// own reason, and the correct chains beside them pass. Each file names the one check that must
/// refuse it, so removing that check fails its case (the chain is accepted or refused for
/// another reason).
final class ForgedChainTests: XCTestCase {
    struct Case: Decodable {
        var name: String
        var platform: String
        var chain: [String]
        var anchors: [String]
        var revoked: [String]
        var time: String
        var expect: String
        var why: String
    }

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("ForgedChains")

    static func cases() throws -> [Case] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        return try files.map { try JSONDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent($0))) }
    }

    static func rules(_ testCase: Case) -> PathRules {
        switch testCase.platform {
        case "android": .android(revocations: RevokedSerials(testCase.revoked))
        case "apple": .apple
        default: .rfc5280
        }
    }

    static func certificates(_ base64: [String]) throws -> [Certificate] {
        try base64.map { try Certificate(derEncoded: Array(try XCTUnwrap(Data(base64Encoded: $0)))) }
    }

    func testEveryForgedChainIsRefusedForItsReasonAndEveryGenuineOnePasses() async throws {
        let cases = try Self.cases()
        XCTAssertGreaterThanOrEqual(cases.count, 29, "the corpus is missing files")
        for testCase in cases {
            let validator = CertificatePathValidator(
                trustAnchors: try Self.certificates(testCase.anchors), rules: Self.rules(testCase),
                verificationTime: try Date(testCase.time, strategy: .iso8601))
            let chain = try Self.certificates(testCase.chain), anchors = try Self.certificates(testCase.anchors)
            do throws(PathRefusal) {
                let path = try await validator.validate(chain)
                XCTAssertEqual("accepted", testCase.expect, "\(testCase.name) (\(testCase.why)) was accepted")
                XCTAssertTrue(path.last.map(anchors.contains) ?? false, "\(testCase.name) ends at its anchor")
            } catch {
                XCTAssertEqual(error.reason.rawValue, testCase.expect, "\(testCase.name) (\(testCase.why)): \(error.detail)")
            }
        }
        // Each refusal reason of the validator has a case (the reasons are metric labels).
        let covered = Set(cases.map(\.expect))
        for reason in PathRefusal.Reason.allCases where reason != .noTrustAnchors {
            XCTAssertTrue(covered.contains(reason.rawValue), "no forged chain is refused for \(reason.rawValue)")
        }
    }

    func testEveryPlatformHasItsForgeries() throws {
        let names = Set(try Self.cases().map(\.name))
        let shared = [
            "genuine", "leaf-issued-by-non-ca", "issuer-without-keycertsign", "pathlen-exceeded", "expired-intermediate", "wrong-root",
            "unknown-critical-extension",
        ]
        for platform in ["android", "apple", "webauthn"] {
            for name in shared { XCTAssertTrue(names.contains("\(platform)-\(name)"), "\(platform)-\(name)") }
        }
        for name in ["android-attest-key", "android-attest-key-without-purpose", "android-revoked-serial", "apple-self-made-intermediate"] {
            XCTAssertTrue(names.contains(name), name)
        }
    }

    func testNoTrustAnchorsRefusesEveryChain() async throws {
        let genuine = try XCTUnwrap(try Self.cases().first { $0.name == "android-genuine" })
        let chain = try Self.certificates(genuine.chain)
        do throws(PathRefusal) {
            _ = try await CertificatePathValidator(trustAnchors: [], rules: Self.rules(genuine)).validate(chain)
            XCTFail("a chain was accepted without trust anchors")
        } catch {
            XCTAssertEqual(error.reason, .noTrustAnchors)
        }
    }

    func testRevokedSerialsCompareAsTheStatusListWritesThem() throws {
        let serial = Certificate.SerialNumber(bytes: [0x00, 0x2C, 0x8C, 0xDD])
        XCTAssertEqual(RevokedSerials.hex(serial), "2c8cdd")
        XCTAssertTrue(RevokedSerials(["2C8CDD"]).contains(serial))
        XCTAssertTrue(RevokedSerials(["002c8cdd"]).contains(serial))
        XCTAssertFalse(RevokedSerials(["2c8cde"]).contains(serial))
    }
}
