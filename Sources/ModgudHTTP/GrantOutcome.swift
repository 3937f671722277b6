import Metrics
import ModgudDomain

/// One token request's grant type and outcome, counted as
/// `modgud_grants_total{grant_type,outcome}`: `success`, or the OAuth error code
/// (`invalid_grant`, `invalid_client`, …), `rate_limited`, `temporarily_unavailable`.
/// Grant types outside the supported set count as `other`, so label values stay bounded.
struct GrantOutcome {
    var grantType = "none"
    var outcome = "invalid_request"

    private static let known: Set<String> =
        Set(GrantType.native.map(\.rawValue) + [GrantType.refreshToken.rawValue, GrantType.clientCredentials.rawValue])

    func record() {
        let type = Self.known.contains(grantType) || grantType == "none" ? grantType : "other"
        Counter(label: "modgud_grants_total", dimensions: [("grant_type", type), ("outcome", outcome)]).increment()
    }
}
