#if canImport(CryptoKit) && canImport(Security) && !os(Linux)
import CryptoKit
import Foundation

/// A DPoP key in the Secure Enclave (Apple platforms): P-256, usable only on this device.
/// Its `dataRepresentation` is an encrypted handle that only this device's enclave can use;
/// keep it in the Keychain to sign with the same key after a relaunch. CI does not build this
/// file (Linux has no Secure Enclave).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct SecureEnclaveDPoPKey: DPoPSigner {
    private let key: SecureEnclave.P256.Signing.PrivateKey

    /// Whether this device has a Secure Enclave (simulators and some Macs do not).
    public static var isAvailable: Bool { SecureEnclave.isAvailable }

    /// A new key in the enclave.
    public init() throws {
        key = try SecureEnclave.P256.Signing.PrivateKey()
    }

    /// The key behind a handle from `dataRepresentation`.
    public init(dataRepresentation: Data) throws {
        key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: dataRepresentation)
    }

    /// The enclave's handle for the key (not the key: it is useless on another device).
    public var dataRepresentation: Data { key.dataRepresentation }

    public var algorithm: String { "ES256" }

    public var publicJWK: [String: String] {
        DPoPProofBuilder.jwk(p256: key.publicKey.rawRepresentation)
    }

    public func signature(for message: Data) throws -> Data {
        try key.signature(for: message).rawRepresentation
    }
}
#endif
