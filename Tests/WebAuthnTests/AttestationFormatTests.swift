import CBOR
import Crypto
import Foundation
import WebAuthn
import XCTest

/// Each format's procedure, fed the real statements of the vectors with one input changed.
final class AttestationFormatTests: XCTestCase {
    struct Sample {
        var name: String
        var format: String
        var statement: CBOR
        var authenticatorData: AuthenticatorData
        var clientDataHash: [UInt8]
        var policy: VerificationPolicy
    }

    /// The valid registration vectors, decoded down to a format's inputs.
    func samples() throws -> [Sample] {
        try VectorTests.requireVectors()
        var samples: [Sample] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: VectorTests.folder.path).sorted() where file.hasSuffix(".json") {
            let vector = try JSONSerialization.jsonObject(with: Data(contentsOf: VectorTests.folder.appendingPathComponent(file))) as! [String: Any]
            guard vector["ceremony"] as? String == "registration", (vector["outcome"] as! [String: Any])["valid"] as! Bool else { continue }
            let response = (vector["credential"] as! [String: Any])["response"] as! [String: Any]
            let object = try CBORDecoder().decode(Base64URL.decode(response["attestationObject"] as! String)!)
            let clientData = Base64URL.decode(response["clientDataJSON"] as! String)!
            let expected = vector["expected"] as! [String: Any]
            var policy = VerificationPolicy(requireUserVerification: false)
            if let time = expected["verification_time"] as? String { policy.verificationTime = try Date(time, strategy: .iso8601) }
            samples.append(
                Sample(
                    name: file, format: object[text: "fmt"]!.textValue!, statement: object[text: "attStmt"]!,
                    authenticatorData: try AuthenticatorData(object[text: "authData"]!.bytesValue!),
                    clientDataHash: Array(SHA256.hash(data: clientData)), policy: policy))
        }
        return samples
    }

    private func verify(_ sample: Sample, clientDataHash: [UInt8]? = nil, statement: CBOR? = nil) async throws -> AttestationResult {
        let format = AttestationFormatRegistry.standard.format(sample.format)!
        return try await format.verify(
            AttestationInput(
                statement: statement ?? sample.statement, authenticatorData: sample.authenticatorData,
                credential: sample.authenticatorData.attestedCredential!, clientDataHash: clientDataHash ?? sample.clientDataHash,
                policy: sample.policy))
    }

    func testEveryFormatRejectsAStatementMadeForAnotherCeremony() async throws {
        let samples = try samples()
        let formats = Set(samples.map(\.format))
        XCTAssertEqual(formats, ["none", "packed", "fido-u2f", "apple", "android-key", "tpm"])
        for sample in samples {
            await XCTAssertNoThrowAsync(try await verify(sample), sample.name)
            guard sample.format != "none" else { continue }
            var other = sample.clientDataHash
            other[0] ^= 0xff
            await XCTAssertThrowsErrorAsync(try await verify(sample, clientDataHash: other), sample.name) { error in
                guard case .attestationInvalid(let format, _) = error as? WebAuthnError else { return XCTFail("\(sample.name): \(error)") }
                XCTAssertEqual(format, sample.format)
            }
        }
    }

    func testEveryX5CFormatRejectsAMissingOrForeignCertificate() async throws {
        let samples = try samples().filter { $0.statement[text: "x5c"] != nil }
        XCTAssertFalse(samples.isEmpty)
        let foreign = samples.first { $0.format == "packed" }!.statement[text: "x5c"]!
        for sample in samples {
            let withoutChain = CBOR.map(sample.statement.mapValue!.filter { $0.key != .text("x5c") })
            await XCTAssertThrowsErrorAsync(try await verify(sample, statement: withoutChain), sample.name)
            guard sample.statement[text: "x5c"] != foreign else { continue }
            let swapped = CBOR.map(sample.statement.mapValue!.map { $0.key == .text("x5c") ? CBORMapEntry($0.key, foreign) : $0 })
            await XCTAssertThrowsErrorAsync(try await verify(sample, statement: swapped), "\(sample.name) with another device's certificate")
        }
    }

    func testNoneRequiresAnEmptyStatement() async throws {
        let sample = try samples().first { $0.format == "none" }!
        await XCTAssertThrowsWebAuthn(.attestationInvalid(format: "none", reason: "attStmt must be an empty map")) {
            _ = try await verify(sample, statement: .map([.init(.text("sig"), .bytes([1]))]))
        }
    }

    func testAnUnknownFormatIsNotInTheRegistry() {
        XCTAssertNil(AttestationFormatRegistry.standard.format("Packed"), "fmt matches case-sensitively (§7.1 step 22)")
        XCTAssertEqual(
            AttestationFormatRegistry.standard.identifiers, ["android-key", "android-safetynet", "apple", "fido-u2f", "none", "packed", "tpm"])
    }
}
