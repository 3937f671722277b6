import Crypto
import X509

/// `fido-u2f` (WebAuthn section 8.6): a U2F authenticator's signature over the U2F
/// registration data, by its attestation certificate.
public struct FidoU2FAttestation: AttestationFormat {
    public let identifier = "fido-u2f"
    public init() {}

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        // §8.6 step 1–2: x5c with exactly one certificate whose key is EC P-256; sig.
        guard let sig = input.statement[text: "sig"]?.bytesValue else {
            throw .attestationInvalid(format: identifier, reason: "attStmt needs sig")
        }
        let chain = try AttestationCertificates.chain(input.statement[text: "x5c"], format: identifier)
        guard chain.count == 1 else { throw .attestationInvalid(format: identifier, reason: "x5c must hold exactly one certificate") }
        guard let certificateKey = P256.Signing.PublicKey(chain[0].publicKey) else {
            throw .attestationInvalid(format: identifier, reason: "the certificate key is not EC P-256")
        }
        // §8.6 step 3–4: the credential key as an uncompressed P-256 point.
        guard case .p256(let credentialKey) = input.credential.publicKey.material else {
            throw .attestationInvalid(format: identifier, reason: "the credential key is not EC P-256")
        }
        // §8.6 step 5: 0x00 || rpIdHash || clientDataHash || credentialId || publicKeyU2F.
        let verificationData = [0x00] + input.authenticatorData.rpIDHash + input.clientDataHash + input.credential.credentialID
            + Array(credentialKey.x963Representation)
        // §8.6 step 6.
        guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: sig),
            certificateKey.isValidSignature(parsed, for: verificationData)
        else {
            throw .attestationInvalid(format: identifier, reason: "sig does not verify")
        }
        let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier)
        return AttestationResult(type: .basic, trustPath: chain, anchored: anchored)
    }
}
