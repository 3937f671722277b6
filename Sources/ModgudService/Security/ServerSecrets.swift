import Crypto
import Foundation

/// Everything derived from the master key (`MODGUD_MASTER_KEY`): the sealer for private
/// material (signing keys, TOTP secrets, outgoing mail) and the pepper of one-time-code
/// hashes. Subkeys come from HKDF-SHA256 (RFC 5869) with distinct labels, so no two uses
/// share a key.
public struct ServerSecrets: Sendable {
    public let sealer: KeySealer
    public let codes: OneTimeCode
    /// The key of device authorizations' user-code hashes (RFC 8628, issue 69): an HMAC, since
    /// a plain hash of a 20^8 space is reversed by enumeration.
    public let userCodes: SymmetricKey

    public init(masterKey: [UInt8]) throws {
        sealer = try KeySealer(masterKey: masterKey)
        let pepper = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey), salt: Array("modgud".utf8), info: Array("one-time-code pepper v1".utf8),
            outputByteCount: 32)
        codes = OneTimeCode(pepper: pepper.withUnsafeBytes { Array($0) })
        userCodes = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey), salt: Array("modgud".utf8), info: Array("device user code v1".utf8),
            outputByteCount: 32)
    }

    /// Seals a TOTP secret for one user (additional data binds it to that user).
    public func sealTOTPSecret(_ secret: [UInt8], realm: String, userID: UUID) throws -> String {
        Data(try sealer.seal(secret, realm: realm, kid: "totp/\(userID.uuidString.lowercased())")).base64EncodedString()
    }

    public func openTOTPSecret(_ sealed: String, realm: String, userID: UUID) throws -> [UInt8] {
        return try sealer.open(Array(Data(base64Encoded: sealed) ?? Data()), realm: realm, kid: "totp/\(userID.uuidString.lowercased())")
    }
}
