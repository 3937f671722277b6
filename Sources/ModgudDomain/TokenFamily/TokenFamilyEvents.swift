import EventSourcing
import Foundation

/// An issued access token as the log remembers it: its hash, never the token.
public struct IssuedAccessToken: Codable, Hashable, Sendable {
    /// SHA-256 of the token (reference tokens) or of its jti (JWTs), base64url.
    public var hash: String
    public var expiresAt: Date
    public var format: AccessTokenFormat
    /// The thumbprint of the DPoP key the token is bound to (RFC 9449); absent: bearer.
    public var dpopKey: String?
    /// A refresh's narrowed or switched scopes and audiences (RFC 6749 section 6, RFC 8707
    /// section 2.2; issue 41); absent: the family's.
    public var scopes: [String]?
    public var audiences: [String]?
    /// The attested app instance the token went to (issue 47); absent: none was attested.
    public var attestation: ClientAttestationFact?

    public init(
        hash: String, expiresAt: Date, format: AccessTokenFormat, dpopKey: String? = nil, scopes: [String]? = nil, audiences: [String]? = nil,
        attestation: ClientAttestationFact? = nil
    ) {
        self.attestation = attestation
        self.scopes = scopes
        self.audiences = audiences
        self.dpopKey = dpopKey
        self.hash = hash
        self.expiresAt = expiresAt
        self.format = format
    }
}

/// token_family.started: one sign-in (or one client_credentials grant).
public struct TokenFamilyStarted: DomainEvent, Equatable {
    public static let eventType = "token_family.started"
    public var familyID: UUID
    public var clientID: String
    /// nil for client_credentials.
    public var userID: UUID?
    public var scopes: [String]
    public var audiences: [String]
    public var grantType: String
    public var authTime: Date
    /// Authentication methods (RFC 8176): `otp`, `mfa`, `hwk`, `user`, …
    public var amr: [String]
    /// The user's security stamp at sign-in; a later stamp kills the family.
    public var securityStamp: String?
    public var accessToken: IssuedAccessToken
    /// SHA-256 of the refresh token, when one was issued.
    public var refreshTokenHash: String?
    public var refreshExpiresAt: Date?
    /// The RFC 7638 thumbprint of the DPoP key the family's refresh tokens are bound to (a
    /// public client that signed in with a DPoP proof; RFC 9449 section 5). Absent: bearer.
    public var dpopKey: String?
    /// The sign-in's `acr` when its methods do not tell it (issue 46: a recovery session).
    /// Absent: derived from `amr`.
    public var acr: String?
    /// The realm's provider id of a sign-in by an ID token exchange (issue 48): the sessions
    /// Apple's `consent-revoked` and `account-delete` end. Absent: no provider.
    public var federation: String?
    /// The resources (RFC 8707) the sign-in asked for: `[]` when it named none, so a refresh
    /// may ask for any audience the client is permitted (section 2.2; issue 65). Absent in
    /// families started before issue 65: a refresh takes one whose audience is the client's
    /// default as having named none.
    public var requestedResources: [String]?
    /// The device session (Native SSO; issue 69) the sign-in started (its `sessionID` is this
    /// family) or joined by a token exchange. Absent: none.
    public var deviceSession: DeviceSessionLink?

    /// Whether this sign-in issued a device secret (it is its device session).
    public var startsDeviceSession: Bool { deviceSession?.sessionID == familyID }

    public init(familyID: UUID, clientID: String, userID: UUID? = nil, scopes: [String], audiences: [String], grantType: String, authTime: Date, amr: [String], securityStamp: String? = nil, accessToken: IssuedAccessToken, refreshTokenHash: String? = nil, refreshExpiresAt: Date? = nil, dpopKey: String? = nil, acr: String? = nil) {
        self.acr = acr
        self.dpopKey = dpopKey
        self.familyID = familyID
        self.clientID = clientID
        self.userID = userID
        self.scopes = scopes
        self.audiences = audiences
        self.grantType = grantType
        self.authTime = authTime
        self.amr = amr
        self.securityStamp = securityStamp
        self.accessToken = accessToken
        self.refreshTokenHash = refreshTokenHash
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// token_family.refreshed: the presented refresh token is spent; a new pair was issued.
public struct TokenFamilyRefreshed: DomainEvent, Equatable {
    public static let eventType = "token_family.refreshed"
    public var spentRefreshHash: String
    public var refreshTokenHash: String
    public var refreshExpiresAt: Date
    public var accessToken: IssuedAccessToken
    public var generation: Int
    /// When the rotation happened (absent in events recorded before the reuse grace existed).
    public var rotatedAt: Date?
    /// A token retired unused: the other of two valid tokens, when one of them was spent.
    public var retiredRefreshHash: String?
    /// A refresh within the reuse grace: the token the first answer issued, kept valid beside
    /// the new one until either is used.
    public var alternateRefreshHash: String?

    public init(
        spentRefreshHash: String, refreshTokenHash: String, refreshExpiresAt: Date, accessToken: IssuedAccessToken, generation: Int,
        rotatedAt: Date? = nil, retiredRefreshHash: String? = nil, alternateRefreshHash: String? = nil
    ) {
        self.alternateRefreshHash = alternateRefreshHash
        self.spentRefreshHash = spentRefreshHash
        self.refreshTokenHash = refreshTokenHash
        self.refreshExpiresAt = refreshExpiresAt
        self.accessToken = accessToken
        self.generation = generation
        self.rotatedAt = rotatedAt
        self.retiredRefreshHash = retiredRefreshHash
    }
}

/// Why a family was revoked.
public enum RevocationReason: String, Codable, Hashable, Sendable {
    /// A spent refresh token was presented again (RFC 9700 section 4.14.2).
    case reuse
    /// The client revoked it (RFC 7009) or the user logged out.
    case logout
    /// The user's security stamp changed.
    case stamp
    /// An administrator revoked it.
    case admin
    /// The user was erased (issue 13).
    case erased
    /// The authorization code that handed the family over was presented again (RFC 9700
    /// section 4.2.4; issue 45).
    case codeReuse = "code_reuse"
    /// The provider account it was signed in with revoked its consent or was deleted (Apple's
    /// server-to-server notifications; issue 48).
    case providerRevoked = "provider_revoked"
    /// The app signed out on the device with the device secret (Native SSO; issue 69): every
    /// app's sign-in in the device session ends.
    case deviceSignOut = "device_sign_out"
}

/// token_family.revoked: every token of the family is dead.
public struct TokenFamilyRevoked: DomainEvent, Equatable {
    public static let eventType = "token_family.revoked"
    public var reason: RevocationReason
    /// For reuse: the spent hash that was presented (a security event for the audit trail).
    public var presentedRefreshHash: String?

    public init(reason: RevocationReason, presentedRefreshHash: String? = nil) {
        self.reason = reason
        self.presentedRefreshHash = presentedRefreshHash
    }
}

/// token_family.refresh_refused: a refresh token of the family was presented after the family
/// ended (revoked, expired, or past the sign-in's absolute lifetime): a sign-in failure of the
/// person's history (issue 43). The app is told `invalid_grant`; the operator is told why. At
/// most one a minute per family (`TokenFamily.refusalInterval`): a client retrying in a loop
/// cannot grow the log.
public struct TokenFamilyRefreshRefused: DomainEvent, Equatable {
    public static let eventType = "token_family.refresh_refused"

    public enum Reason: String, Codable, Hashable, Sendable {
        /// The family was revoked (`revokedBecause` says why).
        case revoked
        /// The refresh token expired (its sliding lifetime).
        case expired
        /// The sign-in reached its absolute lifetime.
        case sessionEnded = "session_ended"
    }

    public var reason: Reason
    public var revokedBecause: RevocationReason?
    /// When it was refused (the next may be recorded a `TokenFamily.refusalInterval` later).
    public var refusedAt: Date

    public init(reason: Reason, revokedBecause: RevocationReason? = nil, refusedAt: Date) {
        self.reason = reason
        self.revokedBecause = revokedBecause
        self.refusedAt = refusedAt
    }
}

/// The events of a token family.
public enum TokenFamilyEvent: AggregateEvent, Equatable {
    case started(TokenFamilyStarted)
    case refreshed(TokenFamilyRefreshed)
    case revoked(TokenFamilyRevoked)
    case refreshRefused(TokenFamilyRefreshRefused)

    public func newEvent() throws -> NewEvent {
        switch self {
        case .started(let event): return try NewEvent(event)
        case .refreshed(let event): return try NewEvent(event)
        case .revoked(let event): return try NewEvent(event)
        case .refreshRefused(let event): return try NewEvent(event)
        }
    }

    public init(decoding envelope: EventEnvelope, registry: EventTypeRegistry) throws {
        switch try registry.decode(envelope) {
        case let event as TokenFamilyStarted: self = .started(event)
        case let event as TokenFamilyRefreshed: self = .refreshed(event)
        case let event as TokenFamilyRevoked: self = .revoked(event)
        case let event as TokenFamilyRefreshRefused: self = .refreshRefused(event)
        default: throw ForeignEventError(type: envelope.type, aggregate: "token-family")
        }
    }

    static func register(in registry: inout EventTypeRegistry) {
        registry.register(TokenFamilyStarted.self)
        registry.register(TokenFamilyRefreshed.self)
        registry.register(TokenFamilyRevoked.self)
        registry.register(TokenFamilyRefreshRefused.self)
    }
}
