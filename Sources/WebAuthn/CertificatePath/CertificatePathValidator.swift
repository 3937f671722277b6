import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// The one certificate path validator for every chain the server trusts (issue 66): WebAuthn
/// attestation (packed, tpm, android-key, apple, fido-u2f, android-safetynet), Apple App
/// Attest and Android key attestation.
///
/// It is swift-certificates' `Verifier` with `RFC5280Policy` (RFC 5280 §6.1: signatures along
/// the path, validity at the verification time, issuer/subject chaining, `basicConstraints
/// cA=TRUE` on every issuer with `pathLenConstraint`, unknown critical extensions refused),
/// plus policies for what that policy leaves out or the platforms add: keyUsage keyCertSign
/// on issuers (§6.1.4 (n), `IssuerKeyUsagePolicy`), revoked serials (`RevokedSerialsPolicy`)
/// and the critical extensions a format checks itself (`PathRules`).
///
/// The one exception to RFC 5280 is Android's documented attestation-key case (Android 12+,
/// `setAttestKeyAlias`): the attested key's certificate is issued by an app's KeyStore key,
/// which is not a CA. It is accepted only when that issuer's own key description says purpose
/// ATTEST_KEY and the issuer itself validates to a root as a path of its own.
public struct CertificatePathValidator: Sendable {
    /// KeyPurpose.ATTEST_KEY (Android KeyMint `KeyPurpose.aidl`).
    static let attestKeyPurpose: Int64 = 7

    public var trustAnchors: [Certificate]
    public var rules: PathRules
    /// The instant validity is checked at (nil: now).
    public var verificationTime: Date?

    public init(trustAnchors: [Certificate], rules: PathRules = .rfc5280, verificationTime: Date? = nil) {
        self.trustAnchors = trustAnchors
        self.rules = rules
        self.verificationTime = verificationTime
    }

    /// Validates `chain` (leaf first, as `x5c` and `KeyStore.getCertificateChain` present it;
    /// the certificates after the leaf are candidates for the path, in any order).
    /// - Returns: the validated path, leaf to trust anchor.
    /// - Throws: `PathRefusal` naming the check that failed.
    public func validate(_ chain: [Certificate]) async throws(PathRefusal) -> [Certificate] {
        guard let leaf = chain.first else { throw PathRefusal(.noPathToTrustAnchor, "the chain is empty") }
        guard !trustAnchors.isEmpty else { throw PathRefusal(.noTrustAnchors, "no trust anchors are configured") }
        if rules.allowsAndroidAttestKey, let attestKey = try Self.attestKeyIssuer(of: chain) {
            try checkLink(leaf, issuedBy: attestKey)
            var rest = self
            rest.rules.allowsAndroidAttestKey = false  // one level: the attest key itself chains to a root
            return [leaf] + (try await rest.validate(Array(chain.dropFirst())))
        }
        let time = verificationTime ?? Date()
        let rules = rules
        var verifier = Verifier(rootCertificates: CertificateStore(trustAnchors)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            IssuerKeyUsagePolicy(mustBePresent: rules.issuersMustCarryKeyUsage)
            RevokedSerialsPolicy(revocations: rules.revocations)
            FormatCheckedExtensionsPolicy(verifyingCriticalExtensions: rules.formatCheckedCriticalExtensions)
        }
        let diagnostics = DiagnosticLog()
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(chain.dropFirst())) { diagnostics.record($0) }
        switch result {
        case .validCertificate(let path):
            return Array(path)
        case .couldNotValidate(let failures):
            throw Self.classify(failures.map(\.policyFailureReason.description), diagnostics: diagnostics.descriptions)
        }
    }

    /// The issuer of an Android key that is itself a KeyStore key (the attestation-key case),
    /// or nil when the issuer is not one (RFC 5280 then decides, and refuses a non-CA).
    static func attestKeyIssuer(of chain: [Certificate]) throws(PathRefusal) -> Certificate? {
        guard chain.count >= 2 else { return nil }
        let issuer = chain[1]
        if case .isCertificateAuthority = (try? issuer.extensions.basicConstraints) ?? nil { return nil }
        guard let value = issuer.extensions[oid: AndroidKeyAttestation.keyDescription]?.value else { return nil }
        guard let description = AndroidKeyDescription(der: Array(value)), description.purposes.contains(attestKeyPurpose) else {
            throw PathRefusal(.attestKeyWithoutPurpose, "\(issuer.subject) issued the key but is a KeyStore key without purpose ATTEST_KEY")
        }
        return issuer
    }

    /// The one link the attestation-key case adds, checked as RFC 5280 §6.1.3 (a) checks any:
    /// the issuer's name and signature, the leaf's validity, revocation and critical extensions.
    func checkLink(_ leaf: Certificate, issuedBy issuer: Certificate) throws(PathRefusal) {
        guard leaf.issuer == issuer.subject, issuer.publicKey.isValidSignature(leaf.signature, for: leaf) else {
            throw PathRefusal(.noPathToTrustAnchor, "\(leaf.subject) is not signed by its attestation key \(issuer.subject)")
        }
        let time = verificationTime ?? Date()
        guard leaf.notValidBefore <= time, time <= leaf.notValidAfter else {
            throw PathRefusal(.outsideValidity, "\(leaf.subject) is not valid at \(time)")
        }
        guard !rules.revocations.contains(leaf.serialNumber) else {
            throw PathRefusal(.revoked, "serial \(RevokedSerials.hex(leaf.serialNumber)) of \(leaf.subject) is revoked")
        }
        let handled: [ASN1ObjectIdentifier] =
            [.X509ExtensionID.basicConstraints, .X509ExtensionID.nameConstraints, .X509ExtensionID.keyUsage] + rules.formatCheckedCriticalExtensions
        if let unknown = leaf.extensions.first(where: { $0.critical && !handled.contains($0.oid) }) {
            throw PathRefusal(.unhandledCriticalExtension, "\(leaf.subject) has the unknown critical extension \(unknown.oid)")
        }
    }

    /// The most specific reason among the verifier's policy failures (one per candidate path)
    /// and its diagnostics (paths it could not build at all).
    static func classify(_ failures: [String], diagnostics: [String]) -> PathRefusal {
        let ranked: [(PathRefusal.Reason, (String) -> Bool)] = [
            (.revoked, { $0.contains(PathRefusal.Reason.revoked.tag) }),
            (.issuerWithoutKeyCertSign, { $0.contains(PathRefusal.Reason.issuerWithoutKeyCertSign.tag) }),
            (.issuerNotCA, { $0.contains("is not marked as a CA") }),
            (.pathLengthExceeded, { $0.contains("maximum path length") }),
            (.outsideValidity, { $0.contains("has expired") || $0.contains("is not yet valid") }),
        ]
        for (reason, matches) in ranked {
            if let failure = failures.first(where: matches) { return PathRefusal(reason, failure) }
        }
        if let failure = failures.first { return PathRefusal(.noPathToTrustAnchor, failure) }
        if let critical = diagnostics.first(where: { $0.contains("critical extensions that the policy does not understand") }) {
            return PathRefusal(.unhandledCriticalExtension, critical)
        }
        return PathRefusal(.noPathToTrustAnchor, "no path from the leaf reaches a trust anchor (a wrong root, or a signature that does not verify)")
    }
}

/// The verifier's diagnostics, kept as values and described only when a path is refused.
private final class DiagnosticLog: @unchecked Sendable {
    // Written by the verifier's callback, which runs synchronously inside `validate`, and
    // read after it returned: one task at a time.
    private var diagnostics: [VerificationDiagnostic] = []

    func record(_ diagnostic: VerificationDiagnostic) { diagnostics.append(diagnostic) }

    var descriptions: [String] { diagnostics.map { String(describing: $0) } }
}
