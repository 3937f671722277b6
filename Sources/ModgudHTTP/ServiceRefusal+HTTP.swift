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
        case .insufficientUserAuthentication: .unauthorized
        }
    }

    /// An RFC 7807 problem titled with the code; a step-up refusal adds RFC 9470's challenge.
    var problem: Response {
        var response = Problem.response(code, status: Int(status.code), detail: message)
        if case .insufficientUserAuthentication(let maxAge) = kind {
            response.headers.append(HTTPField(name: .wwwAuthenticate, value: Self.stepUpChallenge(maxAge: maxAge, description: message)))
        }
        return response
    }

    /// RFC 9470 section 3: `Bearer error="insufficient_user_authentication"` with `max_age`.
    static func stepUpChallenge(maxAge: Int, description: String) -> String {
        #"Bearer realm="modgud", error="insufficient_user_authentication", error_description="\#(description.filter { $0 != "\"" && $0 != "\\" })", max_age=\#(maxAge)"#
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

