import Crypto
import SwiftASN1
import X509

/// `tpm` (WebAuthn section 8.3): a TPM 2.0 attestation identity key certifies the
/// credential key (pubArea) for this ceremony (certInfo.extraData).
public struct TPMAttestation: AttestationFormat {
    public let identifier = "tpm"
    public init() {}

    /// tcg-kp-AIKCertificate (2.23.133.8.3).
    static let aikCertificateUsage: ASN1ObjectIdentifier = [2, 23, 133, 8, 3]

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        let statement = input.statement
        // §8.3 step 1: {ver "2.0", alg, x5c, sig, certInfo, pubArea}.
        guard statement[text: "ver"]?.textValue == "2.0" else { throw .attestationInvalid(format: identifier, reason: "ver is not 2.0") }
        guard let alg = statement[text: "alg"]?.intValue, let sig = statement[text: "sig"]?.bytesValue,
            let certInfoBytes = statement[text: "certInfo"]?.bytesValue, let pubAreaBytes = statement[text: "pubArea"]?.bytesValue
        else {
            throw .attestationInvalid(format: identifier, reason: "attStmt needs alg, sig, certInfo and pubArea")
        }
        guard let pubArea = TPM.Public(pubAreaBytes) else { throw .attestationInvalid(format: identifier, reason: "pubArea is malformed") }
        guard let certInfo = TPM.Attest(certInfoBytes) else { throw .attestationInvalid(format: identifier, reason: "certInfo is malformed") }
        // §8.3 step 2: pubArea's key is the credential key.
        try checkSameKey(pubArea.key, input.credential.publicKey)
        // §8.3 step 4: magic, type, extraData = hash(authenticatorData || clientDataHash) with alg's hash.
        guard certInfo.magic == TPM.generatedValue, certInfo.type == TPM.attestCertify else {
            throw .attestationInvalid(format: identifier, reason: "certInfo is not a TPM-generated certify structure")
        }
        guard let expectedExtra = Self.hash(input.signedData, forSignatureAlgorithm: alg), certInfo.extraData == expectedExtra else {
            throw .attestationInvalid(format: identifier, reason: "certInfo.extraData is not the hash of the ceremony")
        }
        // attested.name = nameAlg || H_nameAlg(pubArea).
        guard let nameDigest = Self.hash(pubAreaBytes, tpmAlgorithm: pubArea.nameAlg),
            certInfo.attestedName == [UInt8(pubArea.nameAlg >> 8), UInt8(pubArea.nameAlg & 0xff)] + nameDigest
        else {
            throw .attestationInvalid(format: identifier, reason: "certInfo does not name pubArea")
        }
        // §8.3 step 5: sig over certInfo by the AIK certificate; certificate requirements (§8.3.1).
        let chain = try AttestationCertificates.chain(statement[text: "x5c"], format: identifier)
        let aik = chain[0]
        guard AttestationCertificates.verify(sig, over: certInfoBytes, with: aik.publicKey, algorithm: alg) else {
            throw .attestationInvalid(format: identifier, reason: "sig does not verify with the AIK certificate")
        }
        try checkAIKCertificate(aik, aaguid: input.credential.aaguid)
        let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier, rules: .tpm)
        return AttestationResult(type: .attestationCA, trustPath: chain, anchored: anchored)
    }

    private func checkSameKey(_ key: TPM.Public.Key, _ credential: COSEKey) throws(WebAuthnError) {
        switch (key, credential.material) {
        case (.rsa(let modulus, let exponent), .rsa(_, let n, let e)):
            let exponentBytes = Array(withUnsafeBytes(of: exponent.bigEndian) { Array($0) }.drop { $0 == 0 })
            guard modulus == n, exponentBytes == Array(e.drop { $0 == 0 }) else {
                throw .attestationInvalid(format: identifier, reason: "pubArea's RSA key is not the credential key")
            }
        case (.ecc(let curve, let x, let y), .p256(let point)):
            let raw = Array(point.x963Representation.dropFirst())
            guard curve == TPM.curveP256, x + y == raw else {
                throw .attestationInvalid(format: identifier, reason: "pubArea's EC key is not the credential key")
            }
        default:
            throw .attestationInvalid(format: identifier, reason: "pubArea's key type differs from the credential key's")
        }
    }

    /// §8.3.1: version 3, empty subject, tcg-kp-AIKCertificate usage, not a CA, AAGUID extension matches.
    private func checkAIKCertificate(_ certificate: Certificate, aaguid: [UInt8]) throws(WebAuthnError) {
        guard certificate.version == .v3 else { throw .attestationInvalid(format: identifier, reason: "AIK certificate is not version 3") }
        guard certificate.subject.isEmpty else { throw .attestationInvalid(format: identifier, reason: "AIK certificate subject is not empty") }
        guard certificate.extensions[oid: .X509ExtensionID.subjectAlternativeName] != nil else {
            throw .attestationInvalid(format: identifier, reason: "AIK certificate has no subject alternative name")
        }
        guard let usage = try? certificate.extensions.extendedKeyUsage,
            usage.contains(ExtendedKeyUsage.Usage(oid: Self.aikCertificateUsage))
        else {
            throw .attestationInvalid(format: identifier, reason: "AIK certificate lacks the tcg-kp-AIKCertificate usage")
        }
        try AttestationCertificates.checkNotCA(certificate, format: identifier)
        try AttestationCertificates.checkAAGUIDExtension(certificate, aaguid: aaguid, format: identifier)
    }

    static func hash(_ data: [UInt8], forSignatureAlgorithm algorithm: Int64) -> [UInt8]? {
        switch COSEAlgorithm(rawValue: algorithm) {
        case .rs1: return Array(Insecure.SHA1.hash(data: data))
        case .es256, .rs256, .ps256: return Array(SHA256.hash(data: data))
        case .es384: return Array(SHA384.hash(data: data))
        default: return nil
        }
    }

    static func hash(_ data: [UInt8], tpmAlgorithm: UInt16) -> [UInt8]? {
        switch tpmAlgorithm {
        case TPM.algSHA1: return Array(Insecure.SHA1.hash(data: data))
        case TPM.algSHA256: return Array(SHA256.hash(data: data))
        case TPM.algSHA384: return Array(SHA384.hash(data: data))
        case TPM.algSHA512: return Array(SHA512.hash(data: data))
        default: return nil
        }
    }
}
