import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// DPoP (RFC 9449): proofs on token requests and with bound access tokens, the server's
/// nonce kept from every answer, and one retry when the server asks for a nonce.
extension ModgudClient {
    /// POSTs `fields` to the token endpoint, with a proof when the client has a DPoP key
    /// (section 5): the tokens it returns are bound to that key.
    func exchangeAtTokenEndpoint(_ fields: [(String, String)]) async throws -> (Data, HTTPURLResponse) {
        try await exchangeProving(Self.form(try await discovery().tokenEndpoint, fields), accessToken: nil, bound: false)
    }

    /// POSTs `fields` to the Authorization Challenge Endpoint (draft-ietf-oauth-first-party-apps),
    /// with a proof by the same key when the client has one: the session, its code and the
    /// tokens are bound to it.
    func exchangeAtChallengeEndpoint(_ fields: [(String, String)]) async throws -> (Data, HTTPURLResponse) {
        guard let endpoint = try await discovery().authorizationChallengeEndpoint else {
            throw ModgudError.discovery("the issuer's metadata has no authorization_challenge_endpoint (native grants off?)")
        }
        return try await exchangeProving(Self.form(endpoint, fields), accessToken: nil, bound: false)
    }

    /// Sends `request` with the session's access token: `Bearer`, or `DPoP` with a proof
    /// carrying the token's hash (`ath`, section 7.1) for a bound session.
    func exchangeAuthorized(_ request: URLRequest, _ session: ModgudSession) async throws -> (Data, HTTPURLResponse) {
        try await exchangeProving(request, accessToken: session.accessToken, bound: session.isDPoPBound)
    }

    /// - Parameters:
    ///   - accessToken: sent in `Authorization`; nil at the token endpoint.
    ///   - bound: the token is DPoP-bound: the scheme is `DPoP` and a proof goes with it.
    private func exchangeProving(_ request: URLRequest, accessToken: String?, bound: Bool) async throws -> (Data, HTTPURLResponse) {
        var retried = false
        while true {
            var signed = request
            if let accessToken { signed.setValue("\(bound ? "DPoP" : "Bearer") \(accessToken)", forHTTPHeaderField: "Authorization") }
            let proving = accessToken == nil || bound
            if proving, let dpop, let url = signed.url {
                let proof = try DPoPProofBuilder.proof(
                    signer: dpop, method: signed.httpMethod ?? "GET", url: url, nonce: dpopNonce, accessToken: bound ? accessToken : nil, now: now())
                signed.setValue(proof, forHTTPHeaderField: "DPoP")
            } else if bound {
                throw ModgudError.storage("the session is DPoP-bound but the client has no DPoP key")
            }
            let answer = try await exchange(signed)
            let nonce = answer.1.value(forHTTPHeaderField: "DPoP-Nonce")
            if let nonce { dpopNonce = nonce }
            // Sections 8 and 9: the server wants a (fresher) nonce; one retry with it.
            guard proving, dpop != nil, !retried, nonce != nil, Self.asksForNonce(answer) else { return answer }
            retried = true
        }
    }

    /// A 400 `use_dpop_nonce` from the token endpoint, or a 401 with a `use_dpop_nonce` challenge.
    static func asksForNonce(_ answer: (Data, HTTPURLResponse)) -> Bool {
        switch answer.1.statusCode {
        case 400:
            return ((try? JSONSerialization.jsonObject(with: answer.0)) as? [String: Any])?["error"] as? String == "use_dpop_nonce"
        case 401:
            return (answer.1.value(forHTTPHeaderField: "WWW-Authenticate") ?? "").contains("use_dpop_nonce")
        default:
            return false
        }
    }

    /// The headers a request to `url` needs with the session's access token, for tools that
    /// send it themselves (`modgud token --header-for`): `Authorization`, and for a bound
    /// session a `DPoP` proof for `method` and `url`.
    public func authorizationHeaders(method: String, url: URL) async throws -> [(name: String, value: String)] {
        let session = try await liveSession()
        guard session.isDPoPBound else { return [("Authorization", "Bearer \(session.accessToken)")] }
        guard let dpop else { throw ModgudError.storage("the session is DPoP-bound but the client has no DPoP key") }
        let proof = try DPoPProofBuilder.proof(signer: dpop, method: method, url: url, nonce: dpopNonce, accessToken: session.accessToken, now: now())
        return [("Authorization", "DPoP \(session.accessToken)"), ("DPoP", proof)]
    }
}
