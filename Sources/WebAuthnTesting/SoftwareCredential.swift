import CBOR
import Crypto
import Foundation
import WebAuthn
import _CryptoExtras

/// A credential held by the software authenticator: its private key and what it was created for.
public struct SoftwareCredential: Sendable {
    /// The private key, by algorithm.
    public enum PrivateKey: Sendable {
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
    }

    public let id: [UInt8]
    public let algorithm: COSEAlgorithm
    public let privateKey: PrivateKey
    public let rpID: String
    public let userHandle: [UInt8]
    /// The signature counter; assertions increment it unless told otherwise.
    public var signCount: UInt32

    /// Creates a credential with a fresh key.
    /// - Parameters:
    ///   - algorithm: ES256, EdDSA or RS256 (PS256 uses the RSA key too).
    ///   - idLength: bytes of random credential id (WebAuthn allows up to 1023).
    public init(algorithm: COSEAlgorithm = .es256, rpID: String, userHandle: [UInt8], idLength: Int = 32, signCount: UInt32 = 0) {
        self.algorithm = algorithm
        self.rpID = rpID
        self.userHandle = userHandle
        self.signCount = signCount
        var generator = SystemRandomNumberGenerator()
        id = (0..<idLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        switch algorithm {
        case .edDSA: privateKey = .ed25519(Curve25519.Signing.PrivateKey())
        case .rs256, .ps256: privateKey = .rsa(try! _RSA.Signing.PrivateKey(keySize: .bits2048))
        default: privateKey = .p256(P256.Signing.PrivateKey())
        }
    }

    /// The public key as a COSE_Key (RFC 9053): EC2, OKP or RSA.
    public var publicKeyCOSE: [UInt8] {
        let entries: [CBORMapEntry]
        switch privateKey {
        case .p256(let key):
            let point = Array(key.publicKey.x963Representation)
            entries = [
                .init(.int(1), .int(2)), .init(.int(3), .int(algorithm.rawValue)), .init(.int(-1), .int(1)),
                .init(.int(-2), .bytes(Array(point[1..<33]))), .init(.int(-3), .bytes(Array(point[33..<65]))),
            ]
        case .ed25519(let key):
            entries = [
                .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(6)),
                .init(.int(-2), .bytes(Array(key.publicKey.rawRepresentation))),
            ]
        case .rsa(let key):
            let primitives = try! key.publicKey.getKeyPrimitives()
            entries = [
                .init(.int(1), .int(3)), .init(.int(3), .int(algorithm.rawValue)),
                .init(.int(-1), .bytes(Array(primitives.modulus))), .init(.int(-2), .bytes(Array(primitives.publicExponent))),
            ]
        }
        return CBOREncoder.encode(.map(entries))
    }

    /// Signs `data` the way an authenticator does for this algorithm (ES256: DER).
    public func sign(_ data: [UInt8]) -> [UInt8] {
        switch privateKey {
        case .p256(let key): return Array(try! key.signature(for: data).derRepresentation)
        case .ed25519(let key): return Array(try! key.signature(for: data))
        case .rsa(let key):
            return Array(try! key.signature(for: data, padding: algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5).rawRepresentation)
        }
    }
}
