import Metrics
import ModgudDomain

/// One token request's grant type and outcome, counted as
/// `modgud_grants_total{grant_type,outcome}`: `success`, or the OAuth error code
/// (`invalid_grant`, `invalid_client`, …), `rate_limited`, `temporarily_unavailable`.
/// Grant types the registry does not serve count as `other`, so label values stay bounded.
struct GrantOutcome {
    var grantType = "none"
    var outcome = "invalid_request"

    func record(servedBy grants: GrantRegistry) {
        let type = grants.serves(grantType) || grantType == "none" ? grantType : "other"
        Counter(label: "modgud_grants_total", dimensions: [("grant_type", type), ("outcome", outcome)]).increment()
    }
}
