import Foundation
import WebAuthn
import X509
import XCTest

/// Runs every vector in ../shared/webauthn-vectors through the verifiers. The folder is
/// enumerated, so a new vector needs no code change.
final class VectorTests: XCTestCase {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/webauthn-vectors")

    /// The reason tags this library reports (WebAuthnError.reason); vectors naming one of
    /// these must fail with exactly it.
    static let knownReasons: Set<String> = [
        "challenge_mismatch", "origin_mismatch", "rp_id_hash_mismatch", "client_data_type_mismatch", "user_presence_required",
        "user_verification_required", "invalid_backup_flags", "backup_eligibility_changed", "sign_count_not_greater_than_stored",
        "signature_invalid", "malformed_cbor", "malformed_cbor_trailing_bytes", "malformed_authenticator_data_trailing_bytes",
        "malformed_authenticator_data_extensions", "unsupported_attestation_format", "algorithm_not_in_pubKeyCredParams",
        "cross_origin_not_allowed", "unknown_credential", "user_handle_mismatch",
    ]

    struct CorpusMissing: Error, CustomStringConvertible {
        let path: String
        var description: String { "stopped: no corpus at \(path)" }
    }

    /// The vectors, or a failure naming the path where they should be (issue 67: a skip would
    /// leave a run green without them; `../shared` is part of every checkout's setup).
    static func requireVectors(file: StaticString = #filePath, line: UInt = #line) throws {
        guard !FileManager.default.fileExists(atPath: folder.path) else { return }
        XCTFail("the shared WebAuthn vectors are not beside this checkout (\(folder.path))", file: file, line: line)
        throw CorpusMissing(path: folder.path)
    }

    func testEveryVectorReachesItsVerdict() async throws {
        try Self.requireVectors()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path)
            .filter { $0.hasSuffix(".json") && $0 != "index.json" }.sorted()
        XCTAssertGreaterThanOrEqual(files.count, 68)
        var failures: [String] = []
        var passed = 0
        for file in files {
            let vector = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.folder.appendingPathComponent(file))) as! [String: Any]
            let outcome = vector["outcome"] as! [String: Any]
            let expectedValid = outcome["valid"] as! Bool
            let result = await Self.run(vector)
            switch (result, expectedValid) {
            case (.success(let values), true):
                let mismatches = Self.compare(values, with: outcome)
                if mismatches.isEmpty { passed += 1 } else { failures.append("\(file): reported values differ: \(mismatches)") }
            case (.failure(let error), false):
                let tag = (outcome["reason"] as? String)?.split(separator: " ").first.map(String.init) ?? ""
                if Self.knownReasons.contains(tag) && error.reason != tag {
                    failures.append("\(file): rejected for \(error.reason) (\(error)), expected \(tag)")
                } else {
                    passed += 1
                }
            case (.success, false):
                failures.append("\(file): accepted, expected rejection for \(outcome["reason"] ?? "?")")
            case (.failure(let error), true):
                failures.append("\(file): rejected (\(error.reason): \(error)), expected valid")
            }
        }
        print("WebAuthn vectors: \(passed) of \(files.count) reached their verdict")
        XCTAssertEqual(failures, [], failures.joined(separator: "\n"))
    }

    /// Values a valid ceremony reports, in the vectors' vocabulary.
    static func run(_ vector: [String: Any]) async -> Result<[String: Any], WebAuthnError> {
        let expected = vector["expected"] as! [String: Any]
        let credentialJSON = try! JSONSerialization.data(withJSONObject: vector["credential"]!)
        let challenge = Base64URL.decode(expected["challenge"] as! String)!
        let origins = OriginPolicy(exact: [expected["origin"] as! String])
        let rpID = expected["rp_id"] as! String
        var policy = VerificationPolicy(
            requireUserPresence: expected["require_user_presence"] as? Bool ?? true,
            requireUserVerification: expected["require_user_verification"] as? Bool ?? false,
            allowCrossOrigin: expected["allow_cross_origin"] as? Bool ?? false)
        if let algorithms = expected["allowed_algorithms"] as? [Int] {
            policy.allowedAlgorithms = algorithms.compactMap { COSEAlgorithm(rawValue: Int64($0)) }
        }
        if let pems = expected["trust_anchors_pem"] {
            let list = (pems as? [String]) ?? [pems as! String]
            policy.trustAnchors = list.map { try! Certificate(pemEncoded: $0) }
            policy.requireTrustedAttestation = true
        }
        if let time = expected["verification_time"] as? String {
            policy.verificationTime = try! Date(time, strategy: .iso8601)
        }
        do {
            if vector["ceremony"] as? String == "registration" {
                let credential = try RegistrationCredential(json: Array(credentialJSON))
                let verdict = try await RegistrationVerifier().verify(
                    credential, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy)
                return .success([
                    "fmt": verdict.attestationFormat, "credential_id": Base64URL.encode(verdict.credentialID),
                    "credential_public_key_cose": Base64URL.encode(verdict.publicKey.encoded), "sign_count": Int(verdict.signCount),
                    "user_verified": verdict.userVerified, "backed_up": verdict.backedUp,
                ])
            }
            let stored = vector["stored_credential"] as! [String: Any]
            let storedCredential = StoredCredential(
                credentialID: Base64URL.decode(stored["credential_id"] as! String)!,
                publicKey: try COSEKey(bytes: Base64URL.decode(stored["public_key_cose"] as! String)!),
                signCount: UInt32(stored["sign_count"] as! Int),
                userHandle: (stored["user_handle"] as? String).flatMap { Base64URL.decode($0) },
                backupEligible: stored["backup_eligible"] as? Bool)
            let credential = try AssertionCredential(json: Array(credentialJSON))
            let verdict = try AssertionVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy, stored: storedCredential)
            return .success([
                "new_sign_count": Int(verdict.newSignCount), "user_verified": verdict.userVerified, "backed_up": verdict.backedUp,
            ])
        } catch {
            return .failure(error)
        }
    }

    static func compare(_ values: [String: Any], with outcome: [String: Any]) -> [String] {
        var mismatches: [String] = []
        for key in ["fmt", "credential_id", "credential_public_key_cose", "sign_count", "new_sign_count", "user_verified", "backed_up"] {
            guard let want = outcome[key], !(want is NSNull) else { continue }
            let got = values[key]
            if "\(want)" != "\(got ?? "nil")" && !(want as? NSNumber == got as? NSNumber && got is Bool) {
                mismatches.append("\(key): \(got ?? "nil") != \(want)")
            }
        }
        return mismatches
    }
}
