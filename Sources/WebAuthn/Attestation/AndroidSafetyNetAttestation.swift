import Crypto
import Foundation
import X509

/// `android-safetynet` (WebAuthn section 8.5): a SafetyNet attestation JWS whose nonce binds
/// the ceremony. Deprecated by Google; verified for completeness. The device must pass
/// the CTS profile check.
public struct AndroidSafetyNetAttestation: AttestationFormat {
    public let identifier = "android-safetynet"
    public init() {}

    private struct Header: Decodable {
        var alg: String
        var x5c: [String]
    }

    private struct Payload: Decodable {
        var nonce: String
        var timestampMs: Double
        var ctsProfileMatch: Bool?
    }

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        // §8.5 step 1: {ver, response} where response is the JWS in compact form.
        guard input.statement[text: "ver"]?.textValue?.isEmpty == false, let response = input.statement[text: "response"]?.bytesValue
        else {
            throw .attestationInvalid(format: identifier, reason: "attStmt needs ver and response")
        }
        let parts = response.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes))
        else {
            throw .attestationInvalid(format: identifier, reason: "response is not a JWS")
        }
        // §8.5 step 2: nonce = base64(SHA-256(authenticatorData || clientDataHash)).
        let nonce = Data(SHA256.hash(data: input.signedData)).base64EncodedString()
        guard payload.nonce == nonce else { throw .attestationInvalid(format: identifier, reason: "the JWS nonce does not match") }
        // §8.5 step 3: the JWS is signed by attest.android.com.
        var chain: [Certificate] = []
        for encoded in header.x5c {
            guard let der = Data(base64Encoded: encoded) else { throw .attestationInvalid(format: identifier, reason: "x5c is not base64") }
            chain.append(try AttestationCertificates.parse(Array(der), format: identifier))
        }
        guard let leaf = chain.first, header.alg == "RS256" || header.alg == "ES256" else {
            throw .attestationInvalid(format: identifier, reason: "JWS header needs alg RS256/ES256 and x5c")
        }
        let signingInput = Array(response[..<(parts[0].count + 1 + parts[1].count)])
        let algorithm: COSEAlgorithm = header.alg == "RS256" ? .rs256 : .es256
        let jwsSignature = algorithm == .es256 ? Self.derFromRaw(signature) : signature
        guard AttestationCertificates.verify(jwsSignature, over: signingInput, with: leaf.publicKey, algorithm: algorithm.rawValue) else {
            throw .attestationInvalid(format: identifier, reason: "the JWS signature does not verify")
        }
        guard let names = try? leaf.extensions.subjectAlternativeNames,
            names.contains(where: { if case .dnsName("attest.android.com") = $0 { return true } else { return false } })
                || "\(leaf.subject)".contains("CN=attest.android.com")
        else {
            throw .attestationInvalid(format: identifier, reason: "the JWS is not from attest.android.com")
        }
        // §8.5 step 4: the device passed integrity checks, recently.
        guard payload.ctsProfileMatch == true else {
            throw .attestationInvalid(format: identifier, reason: "ctsProfileMatch is false")
        }
        let now = (input.policy.verificationTime ?? Date()).timeIntervalSince1970 * 1000
        guard payload.timestampMs <= now + 60_000, now - payload.timestampMs <= 3_600_000 else {
            throw .attestationInvalid(format: identifier, reason: "the SafetyNet response is not recent")
        }
        let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier)
        return AttestationResult(type: .basic, trustPath: chain, anchored: anchored)
    }

    /// JWS ES256 signatures are r || s; ECDSA verification here takes DER.
    static func derFromRaw(_ raw: [UInt8]) -> [UInt8] {
        guard raw.count == 64, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else { return raw }
        return Array(signature.derRepresentation)
    }
}
