import Crypto
import Foundation
import ModgudDomain

/// Opaque tokens (reference access tokens, refresh tokens): 256 random bits, base64url, and
/// the SHA-256 hash that is all the server keeps (docs/architecture.md, "Event sourcing": no secret in the log).
public enum OpaqueToken {
    /// A new token and its hash.
    public static func generate() -> (token: String, hash: String) {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let token = Base64URLText.encode(bytes)
        return (token, hash(token))
    }

    /// The stored form of a presented token.
    public static func hash(_ token: String) -> String {
        Base64URLText.encode(Array(SHA256.hash(data: Array(token.utf8))))
    }
}
