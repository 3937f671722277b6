import Foundation

/// What one Authorization Challenge request leads to (issue 68, item 2): a typed outcome, not
/// a thrown answer. Refusals are thrown: `FirstPartyRefusal`, or the grants' `OAuthError`s.
public enum FirstPartyStep: Sendable {
    /// Section 5.2.1: the authorization code the client redeems with its PKCE verifier.
    case authorizationCode(String)
    /// Section 5.2.2 `insufficient_authorization`: the session to continue with, the
    /// parameters the app collects next (`expecting`), and a passkey ceremony's request options.
    case insufficient(session: String, expecting: [String], passkeyOptions: CeremonyOptions?, description: String)
}

/// Section 5.2.2's errors other than `insufficient_authorization`.
public struct FirstPartyRefusal: Error, Sendable, Equatable {
    public enum Code: String, Sendable {
        case invalidRequest = "invalid_request"
        case invalidSession = "invalid_session"
        case redirectToWeb = "redirect_to_web"
        case unsupportedResponseType = "unsupported_response_type"
    }

    public var code: Code
    public var description: String
    /// `redirect_to_web` only: the realm's web sign-in (`webFallbackURL`), Modgud's member.
    public var webURI: String?

    public init(_ code: Code, _ description: String, webURI: String? = nil) {
        self.code = code
        self.description = description
        self.webURI = webURI
    }

    /// A request the endpoint does not serve in this realm: `redirect_to_web` when the realm
    /// has a web sign-in to send the person to, else `invalid_request`. Modgud has no
    /// authorization endpoint of its own, so no `request_uri` is given.
    public static func redirectToWeb(_ realm: RealmDirectory.Entry, _ description: String) -> FirstPartyRefusal {
        guard let web = realm.settings.webFallbackURL else { return FirstPartyRefusal(.invalidRequest, description) }
        return FirstPartyRefusal(.redirectToWeb, "\(description) Sign in on the web instead.", webURI: web)
    }

    static func invalidRequest(_ description: String) -> FirstPartyRefusal { FirstPartyRefusal(.invalidRequest, description) }
    static func invalidSession(_ description: String) -> FirstPartyRefusal { FirstPartyRefusal(.invalidSession, description) }
}
