import Crypto
import Foundation
import ModgudDomain
import JWTKit
import _CryptoExtras

/// A realm signing key: its private part (only ever in memory or sealed) and its public JWK.
public struct SigningKeyMaterial: Sendable {
    /// Algorithms a realm can sign with: ES256 by default (widest support, cheap to sign);
    /// RS256 because OIDC requires it to be available.
    public enum Algorithm: String, Sendable, CaseIterable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    public let kid: String
    public let algorithm: Algorithm
    /// The private key in a stable byte form: P-256 raw scalar, or RSA PKCS#1 DER.
    let privateBytes: [UInt8]

    /// A fresh key with a random kid (16 base64url characters, never starting with `-`: a
    /// command line would read such a kid as an option, `modgud realm retire-key dev -x…`).
    public static func generate(_ algorithm: Algorithm) throws -> SigningKeyMaterial {
        var kid = OpaqueToken.generate().hash.prefix(16)
        while kid.first == "-" { kid = OpaqueToken.generate().hash.prefix(16) }
        switch algorithm {
        case .es256:
            return SigningKeyMaterial(kid: String(kid), algorithm: .es256, privateBytes: Array(P256.Signing.PrivateKey().rawRepresentation))
        case .rs256:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            return SigningKeyMaterial(kid: String(kid), algorithm: .rs256, privateBytes: Array(key.derRepresentation))
        }
    }

    init(kid: String, algorithm: Algorithm, privateBytes: [UInt8]) {
        self.kid = kid
        self.algorithm = algorithm
        self.privateBytes = privateBytes
    }

    /// The public key as a JWK (RFC 7517, RFC 7518 section 6), with `kid`, `alg` and `use`.
    public func publicJWK() throws -> String {
        switch algorithm {
        case .es256:
            let point = Array(try P256.Signing.PrivateKey(rawRepresentation: privateBytes).publicKey.x963Representation)
            return #"{"kty":"EC","crv":"P-256","x":"\#(Base64URLText.encode(Array(point[1..<33])))","y":"\#(Base64URLText.encode(Array(point[33..<65])))","kid":"\#(kid)","alg":"ES256","use":"sig"}"#
        case .rs256:
            let primitives = try _RSA.Signing.PrivateKey(derRepresentation: privateBytes).publicKey.getKeyPrimitives()
            return #"{"kty":"RSA","n":"\#(Base64URLText.encode(Array(primitives.modulus)))","e":"\#(Base64URLText.encode(Array(primitives.publicExponent)))","kid":"\#(kid)","alg":"RS256","use":"sig"}"#
        }
    }

    /// Adds the key to a jwt-kit collection under its kid.
    func add(to collection: JWTKeyCollection) async throws {
        switch algorithm {
        case .es256:
            await collection.add(
                ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: privateBytes)), kid: JWKIdentifier(string: kid),
                serializer: Self.serializer)
        case .rs256:
            let key = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(derRepresentation: privateBytes))
            await collection.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid), serializer: Self.serializer)
        }
    }
}

extension SigningKeyMaterial {
    /// Writes NumericDates (`iat`, `exp`, `auth_time`, `nbf`) as whole seconds (docs/spec.md section 5).
    /// RFC 7519 section 2 allows fractions, but widely used verifiers reject them: a fractional
    /// `iat` is "in the future" to a verifier whose clock reads the same second.
    static let serializer: DefaultJWTSerializer = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .integerSecondsSince1970
        return DefaultJWTSerializer(jsonEncoder: encoder)
    }()
}
