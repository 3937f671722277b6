import SwiftASN1
import X509

/// `android-key` (WebAuthn section 8.4): a key in Android's hardware-backed keystore, whose
/// attestation certificate describes the key (the KeyDescription extension).
public struct AndroidKeyAttestation: AttestationFormat {
    public let identifier = "android-key"
    public init() {}

    /// 1.3.6.1.4.1.11129.2.1.17
    static let keyDescription: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]
    /// KM_ORIGIN_GENERATED: the key was generated in the keystore.
    static let originGenerated: Int64 = 0
    /// KM_PURPOSE_SIGN.
    static let purposeSign: Int64 = 2

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        guard let alg = input.statement[text: "alg"]?.intValue, let sig = input.statement[text: "sig"]?.bytesValue else {
            throw .attestationInvalid(format: identifier, reason: "attStmt needs alg and sig")
        }
        let chain = try AttestationCertificates.chain(input.statement[text: "x5c"], format: identifier)
        let leaf = chain[0]
        // §8.4 step 2: sig over authenticatorData || clientDataHash by the leaf's key.
        guard AttestationCertificates.verify(sig, over: input.signedData, with: leaf.publicKey, algorithm: alg) else {
            throw .attestationInvalid(format: identifier, reason: "sig does not verify with the attestation certificate")
        }
        // §8.4 step 3: the leaf's key is the credential key.
        guard AttestationCertificates.sameKey(leaf, input.credential.publicKey) else {
            throw .attestationInvalid(format: identifier, reason: "the credential key is not the certificate's key")
        }
        // §8.4 step 4: the extension's attestationChallenge is clientDataHash; allApplications
        // absent; origin KM_ORIGIN_GENERATED and purpose KM_PURPOSE_SIGN (union of both lists).
        guard let value = AttestationCertificates.extensionValue(leaf, oid: Self.keyDescription),
            let description = AndroidKeyDescription(der: Array(value))
        else {
            throw .attestationInvalid(format: identifier, reason: "the key description extension is missing or malformed")
        }
        guard description.attestationChallenge == input.clientDataHash else {
            throw .attestationInvalid(format: identifier, reason: "attestationChallenge is not the client data hash")
        }
        guard !description.allApplications else {
            throw .attestationInvalid(format: identifier, reason: "the key is not scoped to the RP (allApplications)")
        }
        guard description.origins.contains(Self.originGenerated) else {
            throw .attestationInvalid(format: identifier, reason: "the key was not generated in the keystore (origin)")
        }
        guard description.purposes.contains(Self.purposeSign) else {
            throw .attestationInvalid(format: identifier, reason: "the key's purpose is not signing")
        }
        let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier, rules: .android(revocations: input.policy.revokedSerials))
        return AttestationResult(type: .basic, trustPath: chain, anchored: anchored)
    }
}
