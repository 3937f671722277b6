import WebAuthn
import X509

/// The roots the attester trusts (issue 47): Apple's App Attestation root and Google's
/// hardware attestation roots by default (`PlatformAttestationRoots`), replaceable by
/// configuration (tests use authorities of their own, exactly as the platforms' formats).
public struct AttestationRoots: Sendable {
    public var apple: [Certificate]
    public var google: [Certificate]

    public init(apple: [Certificate], google: [Certificate]) {
        self.apple = apple
        self.google = google
    }

    /// The platforms' published roots.
    public static var published: AttestationRoots {
        AttestationRoots(
            apple: PlatformAttestationRoots.apple.compactMap { try? Certificate(pemEncoded: $0) },
            google: PlatformAttestationRoots.google.compactMap { try? Certificate(pemEncoded: $0) })
    }
}
