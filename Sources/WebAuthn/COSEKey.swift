import CBOR
import Crypto
import _CryptoExtras

/// A credential public key in COSE_Key form (RFC 9052 section 7, RFC 9053), parsed and ready
/// to verify signatures.
public struct COSEKey: Sendable {
    /// The key material.
    public enum Material: Sendable {
        case p256(P256.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey, n: [UInt8], e: [UInt8])
    }

    /// The algorithm the key is bound to (COSE label 3).
    public let algorithm: COSEAlgorithm
    public let material: Material
    /// The key as it was encoded (stored with the credential).
    public let encoded: [UInt8]

    /// Parses a COSE_Key from a CBOR item.
    /// - Parameter encoded: the item's bytes, kept for storage.
    public init(_ item: CBOR, encoded: [UInt8]) throws(WebAuthnError) {
        guard item.mapValue != nil else { throw .malformedPublicKey("the COSE key is not a map") }
        guard let kty = item[int: 1]?.intValue else { throw .malformedPublicKey("the COSE key has no kty (1)") }
        guard let algValue = item[int: 3]?.intValue else { throw .malformedPublicKey("the COSE key has no alg (3)") }
        guard let algorithm = COSEAlgorithm(rawValue: algValue), [.es256, .edDSA, .rs256, .ps256].contains(algorithm) else {
            throw .unsupportedAlgorithm(algValue)
        }
        self.algorithm = algorithm
        self.encoded = encoded
        switch (kty, algorithm) {
        case (2, .es256):
            // EC2: crv (-1) must be P-256 (1); x (-2) and y (-3) 32 bytes each.
            guard item[int: -1]?.intValue == 1 else { throw .malformedPublicKey("ES256 needs curve P-256") }
            guard let x = item[int: -2]?.bytesValue, let y = item[int: -3]?.bytesValue, x.count == 32, y.count == 32 else {
                throw .malformedPublicKey("EC2 key coordinates must be 32 bytes")
            }
            do {
                material = .p256(try P256.Signing.PublicKey(x963Representation: [0x04] + x + y))
            } catch {
                throw .malformedPublicKey("the EC2 point is not on P-256")
            }
        case (1, .edDSA):
            // OKP: crv (-1) must be Ed25519 (6); x (-2) 32 bytes.
            guard item[int: -1]?.intValue == 6 else { throw .malformedPublicKey("EdDSA needs curve Ed25519") }
            guard let x = item[int: -2]?.bytesValue, x.count == 32 else { throw .malformedPublicKey("Ed25519 key must be 32 bytes") }
            do {
                material = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: x))
            } catch {
                throw .malformedPublicKey("invalid Ed25519 key")
            }
        case (3, .rs256), (3, .ps256):
            // RSA: n (-1), e (-2).
            guard let n = item[int: -1]?.bytesValue, let e = item[int: -2]?.bytesValue, !n.isEmpty, !e.isEmpty else {
                throw .malformedPublicKey("RSA key needs n and e")
            }
            do {
                material = .rsa(try _RSA.Signing.PublicKey(n: n, e: e), n: n, e: e)
            } catch {
                throw .malformedPublicKey("invalid RSA key (2048 bits at least)")
            }
        default:
            throw .malformedPublicKey("key type \(kty) does not match algorithm \(algorithm)")
        }
    }

    /// Parses a COSE_Key from its bytes (the whole input must be the key).
    public init(bytes: [UInt8]) throws(WebAuthnError) {
        let item: CBOR
        do {
            item = try CBORDecoder().decode(bytes)
        } catch {
            throw .malformedPublicKey("the COSE key is not CBOR: \(error)")
        }
        try self.init(item, encoded: bytes)
    }

    /// Whether `signature` is this key's signature over `data` with the key's algorithm.
    /// ES256 signatures are DER (WebAuthn section 6.5.6); EdDSA raw 64 bytes; RSA raw.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch material {
        case .p256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let key):
            return key.isValidSignature(signature, for: data)
        case .rsa(let key, _, _):
            let parsed = _RSA.Signing.RSASignature(rawRepresentation: signature)
            return key.isValidSignature(parsed, for: data, padding: algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5)
        }
    }
}
