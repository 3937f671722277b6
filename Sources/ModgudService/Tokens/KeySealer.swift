import Crypto
import Foundation

/// Seals private key material with AES-256-GCM under the master key (docs/architecture.md, "Tokens").
///
/// The additional authenticated data binds a sealed key to its realm and kid, so a sealed
/// blob copied to another row does not open.
public struct KeySealer: Sendable {
    private let masterKey: SymmetricKey

    /// - Parameter masterKey: 32 bytes from configuration (`MODGUD_MASTER_KEY`, base64).
    public init(masterKey: [UInt8]) throws {
        guard masterKey.count == 32 else { throw KeySealerError.wrongKeyLength(masterKey.count) }
        self.masterKey = SymmetricKey(data: masterKey)
    }

    public func seal(_ secret: [UInt8], realm: String, kid: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(secret, using: masterKey, authenticating: Array("\(realm)/\(kid)".utf8))
        return Array(box.combined!)
    }

    public func open(_ sealed: [UInt8], realm: String, kid: String) throws -> [UInt8] {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return Array(try AES.GCM.open(box, using: masterKey, authenticating: Array("\(realm)/\(kid)".utf8)))
    }
}

public enum KeySealerError: Error, Equatable, CustomStringConvertible {
    case wrongKeyLength(Int)

    public var description: String {
        switch self {
        case .wrongKeyLength(let length): return "the master key must be 32 bytes, got \(length)"
        }
    }
}
