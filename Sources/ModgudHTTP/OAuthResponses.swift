import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// Writes OAuth JSON responses: `Cache-Control: no-store` on everything carrying tokens or
/// errors (RFC 6749 section 5.1), never a `Set-Cookie`.
enum OAuthResponses {
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, contentType: String = "application/json") -> Response {
        let data = (try? encode(value)) ?? Data("{}".utf8)
        return json(rendered: ByteBuffer(bytes: data), status: status, contentType: contentType)
    }

    /// A JSON answer from an already rendered body.
    static func json(rendered body: ByteBuffer, status: HTTPResponse.Status = .ok, contentType: String = "application/json") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        headers[.pragma] = "no-cache"
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The JSON every answer uses: sorted keys, slashes unescaped.
    static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// The error body with `status`, by default 400, or 401 with a `WWW-Authenticate`
    /// challenge for a failed client authentication (RFC 6749 section 5.2).
    static func error(_ error: OAuthError, status: HTTPResponse.Status? = nil) -> Response {
        let challenged = error.code == .invalidClient && error.authenticationAttempted
        var response = json(
            ErrorBody(
                error: error.error, errorDescription: error.description, credentialID: error.unknownCredential?.credentialID,
                rpID: error.unknownCredential?.rpID, linkSession: error.linkSession?.session, linkSessionExpiresIn: error.linkSession?.expiresIn),
            status: status ?? (challenged ? .unauthorized : .badRequest))
        if challenged { response.headers[.wwwAuthenticate] = #"Basic realm="modgud""# }
        return response
    }

    /// 429 with `Retry-After` (docs/spec.md section 0).
    static func rateLimited(_ limited: RateLimited) -> Response {
        var response = json(
            RateLimitedBody(policy: limited.policy, dimension: limited.dimension, retryAfterSeconds: limited.retryAfterSeconds),
            status: .tooManyRequests)
        response.headers[.retryAfter] = String(limited.retryAfterSeconds)
        return response
    }

    struct RateLimitedBody: Encodable {
        var error = "rate_limited"
        var policy: String
        var dimension: String
        var retryAfterSeconds: Int
    }

    static func token(_ token: TokenResponse) -> Response {
        json(
            TokenBody(
                accessToken: token.accessToken, tokenType: token.tokenType, expiresIn: token.expiresIn, refreshToken: token.refreshToken,
                scope: token.scope, idToken: token.idToken, authSession: token.authSession, passkeyUpgrade: token.passkeyUpgrade,
                issuedTokenType: token.issuedTokenType, deviceSecret: token.deviceSecret))
    }

    static func introspection(_ result: Introspection) -> Response {
        json(
            IntrospectionBody(
                active: result.active, scope: result.scope, clientID: result.clientID, sub: result.subject, aud: result.audiences,
                exp: result.expiresAt, tokenType: result.tokenType, cnf: result.dpopKey.map { ["jkt": $0] }, sid: result.sessionID,
                authTime: result.authTime, acr: result.acr, amr: result.amr, clientAttestation: result.clientAttestation))
    }

    struct ErrorBody: Encodable {
        var error: String
        var errorDescription: String
        /// An unknown passkey's credential id and RP-ID (issue 46), for the device's signal.
        var credentialID: String? = nil
        var rpID: String? = nil
        /// A link the app completes with an email code (issue 48).
        var linkSession: String? = nil
        var linkSessionExpiresIn: Int64? = nil
        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
            case credentialID = "credential_id"
            case rpID = "rp_id"
            case linkSession = "link_session"
            case linkSessionExpiresIn = "link_session_expires_in"
        }
    }

    struct TokenBody: Encodable {
        var accessToken: String
        var tokenType: String
        var expiresIn: Int
        var refreshToken: String?
        var scope: String
        var idToken: String?
        var authSession: String?
        var passkeyUpgrade: Bool?
        var issuedTokenType: String?
        var deviceSecret: String?
        enum CodingKeys: String, CodingKey {
            case scope
            case deviceSecret = "device_secret"
            case issuedTokenType = "issued_token_type"
            case authSession = "auth_session"
            case passkeyUpgrade = "passkey_upgrade"
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshToken = "refresh_token"
            case idToken = "id_token"
        }
    }

    struct IntrospectionBody: Encodable {
        var active: Bool
        var scope: String?
        var clientID: String?
        var sub: String?
        var aud: [String]?
        var exp: Int?
        var tokenType: String?
        /// RFC 9449 section 6.2.
        var cnf: [String: String]?
        /// The session (token family): what a Shared Signals session-revoked SET names.
        var sid: String?
        /// The sign-in (RFC 9470 section 6; issue 46).
        var authTime: Int?
        var acr: String?
        var amr: [String]?
        /// The attested app instance the token went to (issue 47).
        var clientAttestation: ClientAttestationFact?
        enum CodingKeys: String, CodingKey {
            case active, scope, sub, aud, exp, cnf, sid, acr, amr
            case clientAttestation = "client_attestation"
            case authTime = "auth_time"
            case clientID = "client_id"
            case tokenType = "token_type"
        }
    }
}

/// RFC 7807 problem details (`title` = the error code, docs/spec.md section 0).
struct Problem: Encodable {
    var type = "about:blank"
    var title: String
    var status: Int
    var detail: String

    static func response(_ title: String, status: Int, detail: String) -> Response {
        OAuthResponses.json(
            Problem(title: title, status: status, detail: detail), status: .init(code: status), contentType: "application/problem+json")
    }
}
