import Foundation
import X509

/// Verifies an Android app's hardware key attestation: the certificate chain Android's
/// KeyStore returns for a key made with `KeyGenParameterSpec.Builder.setAttestationChallenge`,
/// checked as "Verify hardware-backed key pairs with key attestation" lists: the chain to one
/// of Google's attestation roots, the challenge, the security levels, the verified boot state,
/// and the app (package name and signing certificate) the OS wrote into the key's description.
///
/// The path is validated by `CertificatePathValidator` under `PathRules.android`: RFC 5280,
/// keyUsage keyCertSign on every issuer, Google's attestation status list (`revocations`,
/// shipped as data and replaced by the operator; the server never calls Google), and the
/// attestation-key exception Android documents.
public struct AndroidKeyChainVerifier: Sendable {
    /// A registered app: its package name and the SHA-256 digests of its signing certificates.
    public struct App: Sendable {
        public var packageName: String
        public var signatureDigests: Set<[UInt8]>

        public init(packageName: String, signatureDigests: Set<[UInt8]>) {
            self.packageName = packageName
            self.signatureDigests = signatureDigests
        }
    }

    /// What a verified chain says.
    public struct Verified: Sendable {
        /// The attested key (the leaf certificate's).
        public var publicKey: Certificate.PublicKey
        public var packageName: String
        public var securityLevel: AndroidKeyDescription.SecurityLevel
    }

    public static let format = "android-key-attestation"

    /// Google's hardware attestation roots (or a test authority standing in for them).
    public var trustAnchors: [Certificate]
    /// The least security level accepted for the key and its attestation (default: a TEE).
    public var minimumSecurityLevel: AndroidKeyDescription.SecurityLevel
    public var verificationTime: Date?
    /// Serials Google revoked or suspended (its attestation status list).
    public var revocations: RevokedSerials

    public init(
        trustAnchors: [Certificate], minimumSecurityLevel: AndroidKeyDescription.SecurityLevel = .trustedEnvironment, verificationTime: Date? = nil,
        revocations: RevokedSerials = RevokedSerials()
    ) {
        self.trustAnchors = trustAnchors
        self.revocations = revocations
        self.minimumSecurityLevel = minimumSecurityLevel
        self.verificationTime = verificationTime
    }

    /// - Parameters:
    ///   - chain: DER certificates, leaf first (`KeyStore.getCertificateChain`).
    ///   - challenge: the bytes the app passed to `setAttestationChallenge`.
    ///   - apps: the client's registered Android apps.
    /// - Throws: `WebAuthnError.attestationInvalid` / `.attestationUntrusted` naming the check.
    public func verify(chain der: [[UInt8]], challenge: [UInt8], apps: [App]) async throws(WebAuthnError) -> Verified {
        let format = Self.format
        guard !der.isEmpty, der.count <= 10 else { throw .attestationInvalid(format: format, reason: "the chain needs 1 to 10 certificates") }
        var chain: [Certificate] = []
        for bytes in der { chain.append(try AttestationCertificates.parse(bytes, format: format)) }
        // Each certificate signed by the next, the last by (or being) one of Google's roots.
        let policy = VerificationPolicy(trustAnchors: trustAnchors, requireTrustedAttestation: true, verificationTime: verificationTime)
        _ = try await AttestationCertificates.validate(chain, policy: policy, format: format, rules: .android(revocations: revocations))
        // The attestation extension is in the leaf (the attested key's certificate).
        guard let value = AttestationCertificates.extensionValue(chain[0], oid: AndroidKeyAttestation.keyDescription),
            let description = AndroidKeyDescription(der: Array(value))
        else { throw .attestationInvalid(format: format, reason: "the key description extension is missing or malformed") }
        guard description.attestationChallenge == challenge else {
            throw .attestationInvalid(format: format, reason: "attestationChallenge is not the challenge this server issued")
        }
        guard description.attestationSecurityLevel >= minimumSecurityLevel, description.keyMintSecurityLevel >= minimumSecurityLevel else {
            throw .attestationInvalid(format: format, reason: "the key is not held in secure hardware (security level software)")
        }
        // The boot chain: a locked bootloader and a verified boot (a rooted or unlocked device fails).
        guard let root = description.rootOfTrust, root.deviceLocked, root.verifiedBootState == .verified else {
            throw .attestationInvalid(format: format, reason: "the device's boot is not verified and locked")
        }
        guard let application = description.applicationID else {
            throw .attestationInvalid(format: format, reason: "the key description names no application")
        }
        // One of the client's apps, signed with one of its registered certificates.
        guard let app = apps.first(where: { application.packageNames.contains($0.packageName) }) else {
            throw .attestationInvalid(format: format, reason: "the package is not one of this client's Android apps")
        }
        guard !application.signatureDigests.isEmpty, application.signatureDigests.allSatisfy(app.signatureDigests.contains) else {
            throw .attestationInvalid(format: format, reason: "the app's signing certificate is not one registered for \(app.packageName)")
        }
        return Verified(publicKey: chain[0].publicKey, packageName: app.packageName, securityLevel: description.keyMintSecurityLevel)
    }
}
