/// Why a certificate path was refused: a stable reason (a metric label and a log field) and
/// the validator's own words about which certificate failed.
public struct PathRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The check that refused the path. The raw values are metric labels; do not rename them.
    public enum Reason: String, Sendable, CaseIterable {
        /// No trust anchors are configured, so no path can be validated.
        case noTrustAnchors = "no_trust_anchors"
        /// No path from the leaf reaches a trust anchor: the wrong root, a signature that does
        /// not verify, an issuer name that matches no certificate (RFC 5280 §6.1.3 (a)).
        case noPathToTrustAnchor = "no_path_to_trust_anchor"
        /// A certificate is outside its validity period at the verification time (§6.1.3 (a)(2)).
        case outsideValidity = "outside_validity"
        /// An issuer is not a CA: basicConstraints absent or cA FALSE (§6.1.4 (k)).
        case issuerNotCA = "issuer_not_ca"
        /// An issuer's pathLenConstraint is exceeded (§6.1.4 (l), (m)).
        case pathLengthExceeded = "path_length_exceeded"
        /// An issuer's keyUsage lacks keyCertSign, or a platform's issuer has no keyUsage (§6.1.4 (n)).
        case issuerWithoutKeyCertSign = "issuer_without_key_cert_sign"
        /// A certificate has a critical extension no check here understands (§6.1.4 (o), §4.2).
        case unhandledCriticalExtension = "unhandled_critical_extension"
        /// A certificate's serial is on the platform's revocation status list.
        case revoked = "revoked"
        /// An Android key's issuer is a KeyStore key whose purposes do not include ATTEST_KEY.
        case attestKeyWithoutPurpose = "attest_key_without_purpose"
    }

    public var reason: Reason
    public var detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
