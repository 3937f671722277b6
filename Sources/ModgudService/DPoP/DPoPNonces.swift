import Crypto
import Foundation
import WebAuthn

/// Stateless, rotating DPoP nonces (RFC 9449 section 8): a nonce is a time slot and an HMAC
/// of it under a key every instance derives from the master key, so any instance accepts
/// another's. A nonce is good in its slot and the next (between `slot` and `2 × slot` old).
public struct DPoPNonces: Sendable {
    private let key: SymmetricKey
    public let slot: Int64

    /// - Parameters:
    ///   - masterKey: the 32-byte master key; the nonce key is derived from it (HKDF-SHA256).
    ///   - slot: seconds per slot.
    public init(masterKey: [UInt8], slot: Int64 = 300) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey), info: Array("modgud dpop nonce v1".utf8), outputByteCount: 32)
        self.slot = slot
    }

    /// The nonce for `now`.
    public func current(now: Int64) -> String {
        nonce(slot: now / slot)
    }

    /// Whether `nonce` is this deployment's, for the slot of `now` or the one before.
    public func accepts(_ nonce: String, now: Int64) -> Bool {
        let current = now / slot
        return [current, current - 1].contains { ConstantTime.equal(Array(self.nonce(slot: $0).utf8), Array(nonce.utf8)) }
    }

    private func nonce(slot: Int64) -> String {
        var big = slot.bigEndian
        let counter = withUnsafeBytes(of: &big) { Array($0) }
        let mac = HMAC<SHA256>.authenticationCode(for: counter, using: key)
        return Base64URL.encode(counter + Array(mac).prefix(16))
    }
}
