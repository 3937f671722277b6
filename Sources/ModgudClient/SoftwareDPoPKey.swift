import Foundation

#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif

/// A P-256 DPoP key in software (ES256): for Linux, CLIs and tests. On Apple platforms
/// prefer `SecureEnclaveDPoPKey`, whose private key never leaves the chip.
public struct SoftwareDPoPKey: DPoPSigner {
    private let key: P256.Signing.PrivateKey

    /// A new random key.
    public init() {
        key = P256.Signing.PrivateKey()
    }

    /// The key from its 32-byte private scalar (`rawRepresentation`).
    public init(rawRepresentation: Data) throws {
        key = try P256.Signing.PrivateKey(rawRepresentation: rawRepresentation)
    }

    /// The private scalar, to keep the key between launches (guard it as the session itself).
    public var rawRepresentation: Data { key.rawRepresentation }

    public var algorithm: String { "ES256" }

    public var publicJWK: [String: String] {
        DPoPProofBuilder.jwk(p256: key.publicKey.rawRepresentation)
    }

    public func signature(for message: Data) throws -> Data {
        try key.signature(for: message).rawRepresentation
    }

    /// The key in `url` (base64url of the scalar, a 0600 file), created there on first use:
    /// how `modgud login --dpop` keeps its key beside the session file.
    public static func loadOrCreate(at url: URL) throws -> SoftwareDPoPKey {
        if let data = FileManager.default.contents(atPath: url.path) {
            guard let raw = Base64URL.decode(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw ModgudError.storage("\(url.path) does not hold a DPoP key")
            }
            return try SoftwareDPoPKey(rawRepresentation: raw)
        }
        let key = SoftwareDPoPKey()
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard FileManager.default.createFile(atPath: url.path, contents: Data(Base64URL.encode(key.rawRepresentation).utf8), attributes: [.posixPermissions: 0o600])
        else { throw ModgudError.storage("cannot write \(url.path)") }
        return key
    }
}
