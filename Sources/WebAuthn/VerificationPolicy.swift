import Foundation
import X509

/// The relying party's policy for a ceremony: what it requires beyond the spec's must-checks.
public struct VerificationPolicy: Sendable {
    /// Require the UP flag (§7.1 step 15, §7.2 step 17). Default: true.
    public var requireUserPresence: Bool
    /// Require the UV flag (§7.1 step 16, §7.2 step 18). Default: true (passkeys as MFA).
    public var requireUserVerification: Bool
    /// Accept client data with `crossOrigin: true` (§7.1 step 10). Default: false.
    public var allowCrossOrigin: Bool
    /// The algorithms offered in pubKeyCredParams (§7.1 step 20).
    public var allowedAlgorithms: [COSEAlgorithm]
    /// Roots attestation certificate chains must lead to. Empty: chains are checked for
    /// internal consistency and validity only, and reported as not anchored.
    public var trustAnchors: [Certificate]
    /// Refuse attestations whose chain does not reach a trust anchor (§7.1 step 25).
    public var requireTrustedAttestation: Bool
    /// The instant certificate validity is checked at (nil: now).
    public var verificationTime: Date?
    /// Serials refused in android-key chains (Google's attestation status list).
    public var revokedSerials: RevokedSerials

    public init(
        requireUserPresence: Bool = true, requireUserVerification: Bool = true, allowCrossOrigin: Bool = false,
        allowedAlgorithms: [COSEAlgorithm] = COSEAlgorithm.credentialDefaults, trustAnchors: [Certificate] = [],
        requireTrustedAttestation: Bool = false, verificationTime: Date? = nil, revokedSerials: RevokedSerials = RevokedSerials()
    ) {
        self.requireUserPresence = requireUserPresence
        self.requireUserVerification = requireUserVerification
        self.allowCrossOrigin = allowCrossOrigin
        self.allowedAlgorithms = allowedAlgorithms
        self.trustAnchors = trustAnchors
        self.requireTrustedAttestation = requireTrustedAttestation
        self.verificationTime = verificationTime
        self.revokedSerials = revokedSerials
    }
}
