import SwiftASN1
import X509

/// RFC 5280 §6.1.4 (n): an issuer whose keyUsage is present must assert keyCertSign.
/// swift-certificates' `RFC5280Policy` marks keyUsage as handled but does not check it (its
/// authors follow browsers there), so this policy does. With `mustBePresent`, an issuer below
/// the anchor without keyUsage is refused too (a platform rule, `PathRules`).
struct IssuerKeyUsagePolicy: VerifierPolicy, Sendable {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.keyUsage]
    let mustBePresent: Bool

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        // Every certificate after the leaf issued the one before it.
        for (index, issuer) in chain.enumerated().dropFirst() {
            let isAnchor = index == chain.count - 1
            let usage: KeyUsage?
            do { usage = try issuer.extensions.keyUsage } catch {
                return .failsToMeetPolicy(reason: PathRefusal.Reason.issuerWithoutKeyCertSign.tag + " malformed keyUsage in \(issuer.subject)")
            }
            switch usage {
            case .some(let usage) where !usage.keyCertSign:
                return .failsToMeetPolicy(reason: PathRefusal.Reason.issuerWithoutKeyCertSign.tag + " \(issuer.subject) has keyUsage without keyCertSign")
            case .none where mustBePresent && !isAnchor:
                return .failsToMeetPolicy(reason: PathRefusal.Reason.issuerWithoutKeyCertSign.tag + " \(issuer.subject) has no keyUsage")
            default:
                continue
            }
        }
        return .meetsPolicy
    }
}

extension PathRefusal.Reason {
    /// How this module's own policies mark their failure reasons, so that a refusal can be
    /// told apart from swift-certificates' own (`CertificatePathValidator.classify`).
    var tag: String { "[\(rawValue)]" }
}
