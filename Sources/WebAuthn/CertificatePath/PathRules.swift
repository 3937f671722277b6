import SwiftASN1
import X509

/// What a platform adds to RFC 5280 for its chains: the critical extensions the format's own
/// code checks (so the path validator may accept them), whether issuers must carry keyUsage,
/// the serials the platform revoked, and Android's attestation-key exception.
public struct PathRules: Sendable {
    /// Critical extensions that the caller verifies itself after the path is valid (for
    /// example TPM's subjectAltName, WebAuthn §8.3.1), on top of those RFC 5280 handles.
    public var formatCheckedCriticalExtensions: [ASN1ObjectIdentifier]
    /// Whether every issuer below the anchor must carry keyUsage (with keyCertSign). RFC 5280
    /// §6.1.4 (n) checks keyCertSign only when keyUsage is present; Apple's and Google's
    /// intermediates always carry it, so for their chains an issuer without it is refused.
    public var issuersMustCarryKeyUsage: Bool
    /// Serials refused wherever they appear in the path (Google's attestation status list).
    public var revocations: RevokedSerials
    /// Android's "attestation key" case: the leaf may be issued by an app's KeyStore key whose
    /// own key description says purpose ATTEST_KEY, when that key itself chains to a root.
    public var allowsAndroidAttestKey: Bool

    public init(
        formatCheckedCriticalExtensions: [ASN1ObjectIdentifier] = [], issuersMustCarryKeyUsage: Bool = false,
        revocations: RevokedSerials = RevokedSerials(), allowsAndroidAttestKey: Bool = false
    ) {
        self.formatCheckedCriticalExtensions = formatCheckedCriticalExtensions
        self.issuersMustCarryKeyUsage = issuersMustCarryKeyUsage
        self.revocations = revocations
        self.allowsAndroidAttestKey = allowsAndroidAttestKey
    }

    /// RFC 5280 as it stands: WebAuthn's packed, fido-u2f and android-safetynet chains.
    public static let rfc5280 = PathRules()

    /// TPM attestation (WebAuthn §8.3.1): the AIK certificate's subjectAltName (critical, since
    /// its subject is empty) and extendedKeyUsage are checked by the format.
    public static let tpm = PathRules(formatCheckedCriticalExtensions: [.X509ExtensionID.subjectAlternativeName, .X509ExtensionID.extendedKeyUsage])

    /// Apple's chains (App Attest, WebAuthn `apple`): issuers carry keyUsage keyCertSign.
    public static let apple = PathRules(issuersMustCarryKeyUsage: true)

    /// Google's hardware key attestation chains: issuers carry keyUsage keyCertSign, the
    /// status list's serials are refused, and an ATTEST_KEY issuer is accepted.
    public static func android(revocations: RevokedSerials) -> PathRules {
        PathRules(issuersMustCarryKeyUsage: true, revocations: revocations, allowsAndroidAttestKey: true)
    }
}
