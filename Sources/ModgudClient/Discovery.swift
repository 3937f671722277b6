import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's OpenID Provider metadata (OpenID Connect Discovery 1.0), what the client uses.
struct Discovery: Sendable {
    var tokenEndpoint: URL
    var revocationEndpoint: URL
    var userinfoEndpoint: URL
    /// draft-ietf-oauth-first-party-apps: listed when the realm's native grants are on.
    var authorizationChallengeEndpoint: URL?

    /// - Throws: `.discovery` when the document names another issuer (Discovery section 4.3).
    init(json: Data, expectedIssuer: String) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any], let issuer = object["issuer"] as? String,
            let token = (object["token_endpoint"] as? String).flatMap(URL.init(string:)),
            let revocation = (object["revocation_endpoint"] as? String).flatMap(URL.init(string:)),
            let userinfo = (object["userinfo_endpoint"] as? String).flatMap(URL.init(string:))
        else { throw ModgudError.discovery("the issuer's metadata lacks issuer, token, revocation or userinfo endpoints") }
        guard issuer == expectedIssuer else { throw ModgudError.discovery("the metadata names issuer \(issuer), not \(expectedIssuer)") }
        tokenEndpoint = token
        revocationEndpoint = revocation
        userinfoEndpoint = userinfo
        authorizationChallengeEndpoint = (object["authorization_challenge_endpoint"] as? String).flatMap(URL.init(string:))
    }
}
