import HTTPTypes
import Hummingbird
import ModgudDomain
import ModgudService

/// The one place a service's refusal becomes an HTTP answer: its status, and its body as a
/// problem (Modgud's endpoints) or an OAuth error (Auth0's shapes).
extension ServiceRefusal {
    var status: HTTPResponse.Status {
        switch kind {
        case .invalid: .badRequest
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .conflict: .conflict
        case .unavailable: .serviceUnavailable
        case .tooFrequent: .tooManyRequests
        }
    }

    /// An RFC 7807 problem titled with the code.
    var problem: Response {
        Problem.response(code, status: Int(status.code), detail: message)
    }

    /// An RFC 6749 error body with the same status: a forbidden request is
    /// `unauthorized_client`, an unavailable one `temporarily_unavailable`, the rest
    /// `invalid_request`.
    var oauthResponse: Response {
        let error = switch kind {
        case .forbidden: "unauthorized_client"
        case .unavailable: "temporarily_unavailable"
        default: "invalid_request"
        }
        return OAuthResponses.error(OAuthError(error, message), status: status)
    }
}

