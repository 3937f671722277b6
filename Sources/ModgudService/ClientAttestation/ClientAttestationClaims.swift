import Foundation
import JWTKit

/// The Client Attestation JWT Modgud's attester issues
/// (draft-ietf-oauth-attestation-based-client-auth-10 section 4): explicitly typed
/// `oauth-client-attestation+jwt`, `sub` the client id, `exp`, and `cnf.jwk` the app
/// instance's key (RFC 7800), which signs the proof of possession of every request. `platform`
/// and `app` are Modgud's: how the instance proved itself, and which registered app it is.
public struct ClientAttestationClaims: JWTPayload, Equatable {
    public static let type = "oauth-client-attestation+jwt"

    /// The attester: the realm's issuer.
    public var iss: String
    /// The client id the attestation is for (section 5.1: `sub`).
    public var sub: String
    public var iat: IssuedAtClaim
    public var exp: ExpirationClaim
    public var cnf: Confirmation
    /// `apple-app-attest`, `android-key-attestation` or `play-integrity`.
    public var platform: String
    /// The App ID (`TEAMID.bundle`) or Android package the platform vouched for.
    public var app: String

    public init(
        iss: String, sub: String, iat: IssuedAtClaim, exp: ExpirationClaim, cnf: Confirmation, platform: String, app: String
    ) {
        self.iss = iss
        self.sub = sub
        self.iat = iat
        self.exp = exp
        self.cnf = cnf
        self.platform = platform
        self.app = app
    }

    /// RFC 7800 section 3.2: the instance's public key as a JWK.
    public struct Confirmation: Codable, Equatable, Sendable {
        public var jwk: InstanceKey

        public init(jwk: InstanceKey) { self.jwk = jwk }
    }

    /// A public JWK (EC P-256 or OKP Ed25519), the members RFC 7638 thumbprints.
    public struct InstanceKey: Codable, Equatable, Sendable {
        public var kty: String
        public var crv: String
        public var x: String
        public var y: String?

        public init(kty: String, crv: String, x: String, y: String?) {
            self.kty = kty
            self.crv = crv
            self.x = x
            self.y = y
        }

        /// The JWK as a dictionary (for `DPoPKey`).
        var members: [String: Any] {
            var members: [String: Any] = ["kty": kty, "crv": crv, "x": x]
            if let y { members["y"] = y }
            return members
        }

        /// The key, checked (P-256 or Ed25519, public members only).
        func key() throws(ClientAttestationError) -> DPoPKey {
            let algorithm: DPoPKey.Algorithm = kty == "OKP" ? .edDSA : .es256
            do { return try DPoPKey(jwk: members, algorithm: algorithm) } catch { throw .invalid("cnf.jwk is not a P-256 or Ed25519 public key") }
        }
    }

    /// Expiry is checked by `ClientAttestationVerifier` (to answer `use_fresh_attestation`).
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}
