import SwiftASN1
import X509

/// Refuses a path in which any certificate's serial is revoked (Google's attestation status
/// list: "confirm that none of the keys in the chain have been revoked").
struct RevokedSerialsPolicy: VerifierPolicy, Sendable {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []
    let revocations: RevokedSerials

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard !revocations.isEmpty else { return .meetsPolicy }
        if let revoked = chain.first(where: { revocations.contains($0.serialNumber) }) {
            return .failsToMeetPolicy(
                reason: PathRefusal.Reason.revoked.tag + " serial \(RevokedSerials.hex(revoked.serialNumber)) of \(revoked.subject) is revoked")
        }
        return .meetsPolicy
    }
}

/// Declares the critical extensions a format checks itself after path validation (TPM's
/// subjectAltName), so the verifier does not refuse them as unknown; it checks nothing else.
struct FormatCheckedExtensionsPolicy: VerifierPolicy, Sendable {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult { .meetsPolicy }
}
