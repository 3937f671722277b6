import Logging
import Metrics
import WebAuthn

/// Makes a refused certificate path visible to operators (issue 66): a warning naming the
/// format, the check that refused it and the certificate, and the counter
/// `modgud_certificate_path_refusals_total{format, reason}` (docs/operations/metrics.md).
/// Other verification failures (a wrong challenge, a package not registered) are the client's
/// mistakes and stay in the answer only; a refused path is what a forged chain looks like.
enum CertificatePathRefusals {
    static let logger = Logger(label: "modgud.attestation")

    /// Records `error` when it is a refused path; returns it unchanged for the caller to throw.
    @discardableResult
    static func record(_ error: WebAuthnError, realm: String, clientID: String) -> WebAuthnError {
        guard case .certificatePathRefused(let format, let refusal) = error else { return error }
        Counter(label: "modgud_certificate_path_refusals_total", dimensions: [("format", format), ("reason", refusal.reason.rawValue)]).increment()
        logger.warning(
            "certificate path refused",
            metadata: [
                "realm": "\(realm)", "client_id": "\(clientID)", "format": "\(format)", "reason": "\(refusal.reason.rawValue)",
                "detail": "\(refusal.detail.prefix(600))",
            ])
        return error
    }
}
