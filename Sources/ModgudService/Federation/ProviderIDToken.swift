import Foundation
import JWTKit

/// The claims of a provider's ID token that the exchange reads (OpenID Connect Core section 2,
/// and the providers' additions). Apple writes `email_verified` and `is_private_email` as the
/// strings "true"/"false" in some tokens and as booleans in others; both read as booleans.
public struct ProviderIDToken: JWTPayload, Equatable {
    public var iss: String
    public var sub: String
    public var aud: AudienceClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    public var nonce: String?
    public var email: String?
    public var emailVerified: FlexibleBool?
    /// Apple: the address is a private relay address (`…@privaterelay.appleid.com`).
    public var isPrivateEmail: FlexibleBool?
    public var name: String?
    public var givenName: String?
    public var familyName: String?
    /// Google: the party the token was issued to (the Android client id).
    public var azp: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nonce, email, name, azp
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
        case givenName = "given_name"
        case familyName = "family_name"
    }

    /// Signature checks only: the claims are checked by `IDTokenVerifier`, step by step, so
    /// each refusal can say which.
    public func verify(using algorithm: some JWTAlgorithm) throws {}

    /// A JSON boolean, or a string "true"/"false".
    public struct FlexibleBool: Codable, Equatable, Sendable {
        public var value: Bool

        public init(_ value: Bool) { self.value = value }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let bool = try? container.decode(Bool.self) {
                value = bool
            } else {
                let text = try container.decode(String.self)
                guard text == "true" || text == "false" else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a boolean")
                }
                value = text == "true"
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
}
