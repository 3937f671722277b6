import Foundation
import JWTKit
import ModgudDomain

/// Mints the tokens of one grant: access token (reference or JWT), refresh token, ID token.
///
/// Pure apart from signing: what to remember of each token (its hash, expiry) comes back with
/// it, for the caller to record in the token family's event.
public struct TokenMinter: Sendable {
    /// What was minted, and what the log keeps of it.
    public struct Minted: Sendable {
        public var accessToken: String
        public var accessRecord: IssuedAccessToken
        public var refreshToken: String?
        public var refreshHash: String?
        public var refreshExpiresAt: Date?
        public var idToken: String?
        public var expiresIn: Int
        /// `DPoP` when the access token is bound to a key, else `Bearer` (RFC 9449 section 5).
        public var tokenType: String
    }

    /// Who the tokens are for and what they allow.
    public struct Request: Sendable {
        public var realm: String
        /// The issuer URL of the realm (`https://<host>`), as discovery names it.
        public var issuer: String
        public var clientID: String
        public var format: AccessTokenFormat
        /// nil for client_credentials (the client is the subject).
        public var user: User.State?
        /// The user's personal fields, opened when the scopes ask for them (`profileNeeded`).
        public var profile: UserProfile?
        public var scopes: [String]
        public var audiences: [String]
        public var authTime: Date
        public var amr: [String]
        public var accessLifetime: TimeInterval
        /// nil: no refresh token.
        public var refreshLifetime: TimeInterval?
        public var nonce: String?
        /// The thumbprint of the DPoP key the access token is bound to.
        public var dpopKey: String?
        /// The sign-in's `acr` when the methods do not tell it (a recovery session); nil:
        /// derived from `amr`.
        public var acr: String?
        /// The attested app instance the tokens go to (issue 47).
        public var attestation: ClientAttestationFact?
        /// The device session the sign-in is in (Native SSO; issue 69): the ID token's `sid`
        /// and `ds_hash`.
        public var deviceSession: DeviceSessionLink?

        /// The `acr` the tokens state.
        public var effectiveACR: String { acr ?? AuthenticationContext.acr(amr: amr) }

        public init(
            realm: String, issuer: String, clientID: String, format: AccessTokenFormat, user: User.State?, profile: UserProfile? = nil,
            scopes: [String], audiences: [String], authTime: Date, amr: [String], accessLifetime: TimeInterval, refreshLifetime: TimeInterval?,
            nonce: String? = nil, dpopKey: String? = nil, acr: String? = nil, attestation: ClientAttestationFact? = nil,
            deviceSession: DeviceSessionLink? = nil
        ) {
            self.deviceSession = deviceSession
            self.acr = acr
            self.attestation = attestation
            self.dpopKey = dpopKey
            self.profile = profile
            self.realm = realm
            self.issuer = issuer
            self.clientID = clientID
            self.format = format
            self.user = user
            self.scopes = scopes
            self.audiences = audiences
            self.authTime = authTime
            self.amr = amr
            self.accessLifetime = accessLifetime
            self.refreshLifetime = refreshLifetime
            self.nonce = nonce
        }
    }

    public let keys: SigningKeyRing

    public init(keys: SigningKeyRing) {
        self.keys = keys
    }

    /// Whether tokens for `scopes` carry personal claims (an ID token with `email` or `profile`).
    public static func profileNeeded(scopes: [String]) -> Bool {
        scopes.contains("openid") && (scopes.contains("email") || scopes.contains("profile"))
    }

    public func mint(_ request: Request, now: Date) async throws -> Minted {
        let subject = request.user?.id?.uuidString.lowercased() ?? request.clientID
        let expiresAt = now.addingTimeInterval(request.accessLifetime)
        let access: String
        let accessHash: String
        switch request.format {
        case .reference:
            (access, accessHash) = OpaqueToken.generate()
        case .jwt:
            // The whole token's hash identifies it (issue 44): a lookup then binds the signature
            // too, so a JWT with a known jti and any other signature or claims finds nothing.
            let jti = OpaqueToken.generate().token
            let claims = AccessTokenClaims(
                iss: .init(value: request.issuer), sub: .init(value: subject), aud: .init(value: request.audiences),
                exp: .init(value: expiresAt), iat: .init(value: now), jti: .init(value: jti),
                scope: request.scopes.joined(separator: " "), clientID: request.clientID,
                cnf: request.dpopKey.map { AccessTokenClaims.Confirmation(jkt: $0) }, authTime: request.user == nil ? nil : request.authTime,
                acr: request.user == nil ? nil : request.effectiveACR, amr: request.user == nil ? nil : request.amr,
                clientAttestation: request.attestation)
            access = try await keys.sign(claims, realm: request.realm)
            accessHash = OpaqueToken.hash(access)
        }
        var minted = Minted(
            accessToken: access,
            accessRecord: IssuedAccessToken(
                hash: accessHash, expiresAt: expiresAt, format: request.format, dpopKey: request.dpopKey, attestation: request.attestation),
            refreshToken: nil, refreshHash: nil, refreshExpiresAt: nil, idToken: nil, expiresIn: Int(request.accessLifetime),
            tokenType: request.dpopKey == nil ? "Bearer" : "DPoP")
        if let lifetime = request.refreshLifetime {
            let (token, hash) = OpaqueToken.generate()
            minted.refreshToken = token
            minted.refreshHash = hash
            minted.refreshExpiresAt = now.addingTimeInterval(lifetime)
        }
        if request.scopes.contains("openid"), let user = request.user {
            let email = request.scopes.contains("email")
            let profile = request.scopes.contains("profile")
            let claims = IDTokenClaims(
                iss: .init(value: request.issuer), sub: .init(value: subject), aud: .init(value: [request.clientID]),
                exp: .init(value: expiresAt), iat: .init(value: now), authTime: request.authTime, amr: request.amr,
                acr: request.effectiveACR, nonce: request.nonce,
                email: email ? request.profile?.email : nil, emailVerified: email && request.profile?.email != nil ? user.emailConfirmed : nil,
                givenName: profile ? request.profile?.firstName : nil, familyName: profile ? request.profile?.lastName : nil,
                preferredUsername: profile ? request.profile?.username : nil, sid: request.deviceSession?.sessionID.uuidString.lowercased(),
                dsHash: request.deviceSession?.secretHash)
            minted.idToken = try await keys.sign(claims, realm: request.realm)
        }
        return minted
    }
}
