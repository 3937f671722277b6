import Foundation
import HTTPTypes
import Hummingbird
import ModgudDomain
import ModgudService

/// Who a live access token speaks for, at an endpoint that takes one.
struct Caller {
    var userID: UUID
    var clientID: String
    /// The sign-in the token belongs to, and what it allows.
    var familyID: UUID
    var scopes: [String]
    var audiences: [String]
    /// How the token came: a refusal after authentication answers in the same scheme.
    var scheme: ProtectedResource.Scheme
}

/// Authenticates the callers of userinfo, the passkey endpoints and the account APIs: an
/// `Authorization: Bearer` token (RFC 6750), or an `Authorization: DPoP` token with a `DPoP`
/// proof of its key (RFC 9449 section 7). A DPoP-bound token is refused as Bearer, so a
/// copied token is useless without the key that signs its proofs.
struct ProtectedResource: Sendable {
    let introspection: TokenIntrospection
    let clients: ClientAuthenticator
    let dpop: DPoPVerifier?

    enum Scheme: Sendable {
        case bearer, dpop
    }

    /// The caller behind the request's access token, or a 401 challenge (thrown as a parsing
    /// response). Tokens without a user (client credentials) are `invalid_token` here.
    ///
    /// A recovery session's token (issue 46) is taken only where `allowsRecovery` (passkey
    /// enrollment, the caller's sessions); elsewhere it is RFC 9470's 401
    /// `insufficient_user_authentication` with `acr_values` naming a real sign-in.
    func caller(_ request: Request, realm: String, issuer: String, allowsRecovery: Bool = false) async throws -> Caller {
        let (found, scheme) = try await authenticate(request, realm: realm, issuer: issuer)
        guard let userID = found.userID else { throw RequestParsing.Failure.response(Self.challenge("invalid_token", scheme: scheme)) }
        if !allowsRecovery, found.scopes.contains(TokenService.recoveryScope) {
            throw RequestParsing.Failure.response(
                Self.challenge(
                    "insufficient_user_authentication", scheme: scheme,
                    description: "A recovery session can only enroll a passkey and manage sessions: sign in with it.",
                    parameters: [#"acr_values="\#(AuthenticationContext.singleFactor) \#(AuthenticationContext.mfa)""#]))
        }
        return Caller(
            userID: userID, clientID: found.clientID, familyID: found.familyID, scopes: found.scopes, audiences: found.audiences, scheme: scheme)
    }

    /// The caller of an endpoint that changes the account (passkeys, TOTP, address
    /// confirmation, sessions): as `caller`, so any live user token of this realm, from any of
    /// its sign-ins or refreshes, whatever `resource` narrowed its audience to (issue 65: the
    /// guide sends "the same access token the app already holds"). A token of another realm is
    /// not found, and a client's own token (client credentials) has no user: both 401
    /// `invalid_token`. With the realm's `AccountGuards.accountAudience` on, the token must
    /// also be for the app itself or My Account (its audiences name the client or
    /// `<base>/me/`), so an API cannot replay a token minted for it here (RFC 9700 sections
    /// 2.3 and 4.10.1); docs/decisions.md, "Account endpoints and audiences", says why that is
    /// an option.
    func accountCaller(_ request: Request, realm: RealmDirectory.Entry, issuer: String, allowsRecovery: Bool = false) async throws -> Caller {
        let caller = try await caller(request, realm: realm.realmID, issuer: issuer, allowsRecovery: allowsRecovery)
        guard realm.settings.accountGuards.accountAudience else { return caller }
        let forAccount = caller.audiences.contains(caller.clientID) || caller.audiences.contains(Self.myAccountAudience(issuer: issuer))
        guard forAccount else {
            throw RequestParsing.Failure.response(
                Self.challenge("invalid_token", scheme: caller.scheme, description: "This access token is for another audience than the app or My Account."))
        }
        return caller
    }

    /// The caller of a My Account endpoint (`/me/v1/…`): as `caller`, and the token must carry
    /// `scope` (else 403 `insufficient_scope`, RFC 6750 section 3.1). With the realm's
    /// `AccountGuards.accountAudience` on, it must also be for the host's My Account audience
    /// (else 401 `invalid_token`).
    func myAccountCaller(_ request: Request, realm: RealmDirectory.Entry, issuer: String, scope: String) async throws -> Caller {
        let caller = try await caller(request, realm: realm.realmID, issuer: issuer)
        if realm.settings.accountGuards.accountAudience, !caller.audiences.contains(Self.myAccountAudience(issuer: issuer)) {
            throw RequestParsing.Failure.response(Self.challenge("invalid_token", scheme: caller.scheme))
        }
        guard caller.scopes.contains(scope) else {
            throw RequestParsing.Failure.response(Self.challenge("insufficient_scope", scheme: caller.scheme, status: .forbidden))
        }
        return caller
    }

    /// The My Account audience of an issuer: `https://login.example.com/me/`.
    static func myAccountAudience(issuer: String) -> String {
        RequestParsing.base(of: issuer) + "/me/"
    }

    /// The client behind a client-credentials access token (a service such as a Shared
    /// Signals receiver): tokens issued to a user are `invalid_token` here.
    func service(_ request: Request, realm: String, issuer: String) async throws -> (clientID: String, scopes: [String], scheme: Scheme) {
        let (found, scheme) = try await authenticate(request, realm: realm, issuer: issuer)
        guard found.userID == nil else {
            throw RequestParsing.Failure.response(
                Self.challenge("invalid_token", scheme: scheme, description: "This endpoint takes a client's own token (client_credentials)."))
        }
        // RFC 9700 section 2.3: a token the client asked for another API (`resource`) is that
        // API's, which could replay it here; only a token for the client itself is taken.
        guard found.audiences.contains(found.clientID) else {
            throw RequestParsing.Failure.response(
                Self.challenge("invalid_token", scheme: scheme, description: "This access token is for another audience than the client itself."))
        }
        return (found.clientID, found.scopes, scheme)
    }

    /// A live token in the scheme its binding requires, with a valid proof for DPoP.
    private func authenticate(_ request: Request, realm: String, issuer: String) async throws -> (TokenTables.AccessToken, Scheme) {
        guard let (scheme, token) = Self.credentials(request) else { throw RequestParsing.Failure.response(Self.challenge(nil, scheme: nil)) }
        guard let found = try await introspection.liveAccessToken(realm: realm, token: token) else {
            throw RequestParsing.Failure.response(Self.challenge("invalid_token", scheme: scheme))
        }
        switch (scheme, found.dpopKey) {
        case (.bearer, nil):
            break
        case (.bearer, .some):
            // RFC 9449 section 7.2: a bound token presented as a bearer token is refused.
            throw RequestParsing.Failure.response(
                Self.challenge("invalid_token", scheme: .dpop, description: "This access token is bound to a DPoP key: send it with the DPoP scheme and a proof."))
        case (.dpop, nil):
            // Section 7.1: the DPoP scheme names a bound token; this one is not.
            throw RequestParsing.Failure.response(Self.challenge("invalid_token", scheme: .dpop, description: "This access token is not DPoP-bound."))
        case (.dpop, .some(let thumbprint)):
            try await checkProof(request, token: token, thumbprint: thumbprint, realm: realm, clientID: found.clientID, issuer: issuer)
        }
        return (found, scheme)
    }

    /// RFC 9449 section 7.1: one proof, valid for this request (section 4.3, with `ath` for the
    /// token, step 12), fresh, unused, and by the token's key (`cnf.jkt`, section 6.1).
    private func checkProof(_ request: Request, token: String, thumbprint: String, realm: String, clientID: String, issuer: String) async throws {
        let proofs = request.headers[values: .dpop]
        do {
            guard proofs.count == 1 else { throw DPoPError.invalid(proofs.isEmpty ? "send a DPoP proof" : "send exactly one DPoP header") }
            guard let dpop else { throw DPoPError.invalid("this server cannot check DPoP proofs") }
            let requireNonce = try await clients.enabledClient(realm: realm, clientID: clientID)?.dpopNonce ?? false
            let proof = try await dpop.verify(
                proofs[0], method: request.method.rawValue, url: RequestParsing.base(of: issuer) + request.uri.path, accessToken: token,
                requireNonce: requireNonce)
            guard ConstantTime.equal(proof.key.thumbprint, thumbprint) else { throw DPoPError.invalid("the proof is by another key than the token's") }
        } catch let refusal as DPoPError {
            throw RequestParsing.Failure.response(refused(refusal))
        }
    }

    /// Section 7.1 and 9: a proof's refusal as a DPoP challenge; `use_dpop_nonce` carries a nonce.
    private func refused(_ refusal: DPoPError) -> Response {
        switch refusal {
        case .invalid(let detail):
            return Self.challenge("invalid_dpop_proof", scheme: .dpop, description: "The DPoP proof is invalid: \(detail).")
        case .replayed:
            return Self.challenge("invalid_dpop_proof", scheme: .dpop, description: "The DPoP proof was used before.")
        case .useNonce(let detail):
            var response = Self.challenge("use_dpop_nonce", scheme: .dpop, description: detail)
            if let dpop { response.headers[.dpopNonce] = dpop.currentNonce }
            return response
        }
    }

    /// The scheme and token of the `Authorization` header (schemes are case-insensitive,
    /// RFC 9110 section 11.1), or nil without one of ours.
    static func credentials(_ request: Request) -> (Scheme, String)? {
        guard let authorization = request.headers[.authorization], let space = authorization.firstIndex(of: " ") else { return nil }
        let token = authorization[space...].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { return nil }
        switch authorization[..<space].lowercased() {
        case "bearer": return (.bearer, token)
        case "dpop": return (.dpop, token)
        default: return nil
        }
    }

    /// RFC 6750 section 3 and RFC 9449 section 7.1: 401 (403 for insufficient scope) with a
    /// challenge in the scheme the token came in. Without credentials both schemes are offered,
    /// the DPoP one with the algorithms it takes.
    static func challenge(
        _ error: String?, scheme: Scheme?, status: HTTPResponse.Status = .unauthorized, description: String? = nil, parameters extra: [String] = []
    ) -> Response {
        var response = Response(status: status)
        var parameters = [#"realm="modgud""#]
        if let error { parameters.append(#"error="\#(error)""#) }
        if let description { parameters.append(#"error_description="\#(description.filter { $0 != "\"" && $0 != "\\" })""#) }
        parameters += extra
        let algorithms = #"algs="\#(DPoPKey.Algorithm.allCases.map(\.rawValue).joined(separator: " "))""#
        switch scheme {
        case .bearer?:
            response.headers.append(HTTPField(name: .wwwAuthenticate, value: "Bearer " + parameters.joined(separator: ", ")))
        case .dpop?:
            response.headers.append(HTTPField(name: .wwwAuthenticate, value: "DPoP " + (parameters + [algorithms]).joined(separator: ", ")))
        case nil:
            response.headers.append(HTTPField(name: .wwwAuthenticate, value: "Bearer " + parameters.joined(separator: ", ")))
            response.headers.append(HTTPField(name: .wwwAuthenticate, value: "DPoP " + (parameters + [algorithms]).joined(separator: ", ")))
        }
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
