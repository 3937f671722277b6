import Crypto
import Foundation
import WebAuthn

/// The public key in a DPoP proof's `jwk` header (RFC 9449 section 4.2), ES256 (P-256) or
/// EdDSA (Ed25519), with its RFC 7638 thumbprint, the `jkt` a bound token names.
public struct DPoPKey: Sendable, Equatable {
    public enum Algorithm: String, Sendable, CaseIterable {
        case es256 = "ES256"
        case edDSA = "EdDSA"
    }

    public let algorithm: Algorithm
    /// The key's canonical JWK members, as RFC 7638 section 3 orders them.
    private let canonical: String
    private let key: PublicKey

    private enum PublicKey: Sendable {
        case p256(P256.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
    }

    /// The RFC 7638 thumbprint: base64url SHA-256 of the required members in lexicographic order.
    public var thumbprint: String { Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8)))) }

    /// Reads a public JWK for `algorithm`; refuses private members (RFC 9449 section 4.3,
    /// step 7) and keys of another type or curve.
    init(jwk: [String: Any], algorithm: Algorithm) throws(DPoPError) {
        guard jwk["d"] == nil, jwk["p"] == nil, jwk["q"] == nil, jwk["k"] == nil else { throw .invalid("the jwk holds a private key") }
        self.algorithm = algorithm
        switch algorithm {
        case .es256:
            guard jwk["kty"] as? String == "EC", jwk["crv"] as? String == "P-256", let x = jwk["x"] as? String, let y = jwk["y"] as? String,
                let xBytes = Self.strictBase64URL(x), let yBytes = Self.strictBase64URL(y), xBytes.count == 32, yBytes.count == 32,
                let parsed = try? P256.Signing.PublicKey(rawRepresentation: xBytes + yBytes)
            else { throw .invalid("the jwk is not a P-256 public key") }
            canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
            key = .p256(parsed)
        case .edDSA:
            guard jwk["kty"] as? String == "OKP", jwk["crv"] as? String == "Ed25519", let x = jwk["x"] as? String,
                let xBytes = Self.strictBase64URL(x), let parsed = try? Curve25519.Signing.PublicKey(rawRepresentation: xBytes)
            else { throw .invalid("the jwk is not an Ed25519 public key") }
            canonical = #"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#
            key = .ed25519(parsed)
        }
    }

    /// Whether `signature` is this key's over `message` (JWS: ES256 as r || s, RFC 7518
    /// section 3.4; EdDSA, RFC 8037 section 3.1).
    func verifies(_ signature: [UInt8], over message: [UInt8]) -> Bool {
        switch key {
        case .p256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: message)
        case .ed25519(let key):
            return key.isValidSignature(signature, for: message)
        }
    }

    public static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool { lhs.canonical == rhs.canonical }

    /// Unpadded base64url only (RFC 7515 section 2), as JWS requires.
    static func strictBase64URL(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0.isBase64URLSymbol }) else { return nil }
        return Base64URL.decode(text)
    }
}

extension UInt8 {
    fileprivate var isBase64URLSymbol: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || (0x30...0x39).contains(self) || self == 0x2D || self == 0x5F
    }
}
