import Foundation
import JWTKit
import ModgudDomain

/// Claims of a JWT access token (RFC 9068 shape: iss, sub, aud, exp, iat, jti, scope, client_id).
public struct AccessTokenClaims: JWTPayload, Equatable {
    public var iss: IssuerClaim
    public var sub: SubjectClaim
    public var aud: AudienceClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    public var jti: IDClaim
    public var scope: String
    public var clientID: String
    /// The DPoP key the token is bound to (RFC 9449 section 6.1: `cnf.jkt`).
    public var cnf: Confirmation?
    /// A user token's sign-in (RFC 9068 section 2.2.1; issue 46): when, and how. A refresh keeps
    /// the sign-in's, so an API can judge freshness (RFC 9470) from the access token alone.
    public var authTime: Date?
    public var acr: String?
    public var amr: [String]?
    /// The attested app instance the token went to (issue 47).
    public var clientAttestation: ClientAttestationFact?

    /// RFC 7800's confirmation claim, with RFC 9449's `jkt` member.
    public struct Confirmation: Codable, Equatable, Sendable {
        public var jkt: String
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, jti, scope, cnf, acr, amr
        case clientID = "client_id"
        case authTime = "auth_time"
        case clientAttestation = "client_attestation"
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Claims of an OpenID Connect ID token (OIDC Core section 2, section 5.1 for the profile claims).
public struct IDTokenClaims: JWTPayload, Equatable {
    public var iss: IssuerClaim
    public var sub: SubjectClaim
    public var aud: AudienceClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    public var authTime: Date
    public var amr: [String]
    public var acr: String?
    public var nonce: String?
    public var email: String?
    public var emailVerified: Bool?
    public var givenName: String?
    public var familyName: String?
    public var preferredUsername: String?
    /// Native SSO (draft 07 section 3.2; issue 69): the device session, and the hash of its
    /// device secret (SHA-256, base64url), in every ID token of a sign-in in one.
    public var sid: String?
    public var dsHash: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, amr, acr, nonce, email, sid
        case dsHash = "ds_hash"
        case authTime = "auth_time"
        case emailVerified = "email_verified"
        case givenName = "given_name"
        case familyName = "family_name"
        case preferredUsername = "preferred_username"
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}
