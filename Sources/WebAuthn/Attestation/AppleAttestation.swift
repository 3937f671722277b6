import Crypto
import SwiftASN1

/// `apple` (WebAuthn section 8.8): Apple's anonymous attestation; the leaf certificate
/// carries a nonce over the ceremony and the credential's own key.
public struct AppleAttestation: AttestationFormat {
    public let identifier = "apple"
    public init() {}

    /// 1.2.840.113635.100.8.2
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 8, 2]

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        let chain = try AttestationCertificates.chain(input.statement[text: "x5c"], format: identifier)
        let credentialCertificate = chain[0]
        // §8.8 steps 2–4: nonce = SHA-256(authenticatorData || clientDataHash) equals the
        // extension's value: SEQUENCE { [1] EXPLICIT OCTET STRING }.
        let nonce = Array(SHA256.hash(data: input.signedData))
        guard let value = AttestationCertificates.extensionValue(credentialCertificate, oid: Self.nonceExtension),
            let certified = Self.nonce(in: value), certified == nonce
        else {
            throw .attestationInvalid(format: identifier, reason: "the certificate nonce does not match the ceremony")
        }
        // §8.8 step 5: the credential key is the certificate's key.
        guard AttestationCertificates.sameKey(credentialCertificate, input.credential.publicKey) else {
            throw .attestationInvalid(format: identifier, reason: "the credential key is not the certificate's key")
        }
        let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier, rules: .apple)
        return AttestationResult(type: .anonymizationCA, trustPath: chain, anchored: anchored)
    }

    static func nonce(in value: ArraySlice<UInt8>) -> [UInt8]? {
        guard let sequence = try? DER.parse(Array(value)), case .constructed(let children) = sequence.content else { return nil }
        for child in children where child.identifier.tagClass == .contextSpecific && child.identifier.tagNumber == 1 {
            guard case .constructed(let inner) = child.content, let octets = inner.first(where: { _ in true }),
                case .primitive(let bytes) = octets.content
            else { return nil }
            return Array(bytes)
        }
        return nil
    }
}
