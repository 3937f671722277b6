import Crypto
import Foundation
import WebAuthn

/// Challenges for client attestation (issue 47): the attester's (App Attest `clientDataHash`,
/// Android `setAttestationChallenge`) and the authorization server's
/// (draft-ietf-oauth-attestation-based-client-auth-10 section 6: `attestation_challenge`, the
/// PoP's `challenge`). A challenge is a time slot, 16 random bytes and an HMAC over both under
/// a key every instance derives from the master key: any instance can issue and check one
/// without storing it. It is good in its slot and the next; single use is the database's
/// (`ClientAttestationReplay`).
///
/// The federation nonces of ID token exchanges (issue 48) are the same construction under
/// their own label, so a challenge of one kind is never a nonce of the other.
public struct AttestationChallenges: Sendable {
    private let key: SymmetricKey
    /// Seconds per slot: a challenge lives between one and two slots.
    public let slot: Int64

    public init(masterKey: [UInt8], slot: Int64 = 300, label: String = "modgud client attestation challenge v1") {
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: masterKey), info: Array(label.utf8), outputByteCount: 32)
        self.slot = slot
    }

    /// A new challenge.
    public func issue(now: Date) -> String {
        var big = (Int64(now.timeIntervalSince1970) / slot).bigEndian
        let body = withUnsafeBytes(of: &big) { Array($0) } + (0..<16).map { _ in UInt8.random(in: 0...255) }
        return Base64URL.encode(body + mac(body))
    }

    /// Whether `challenge` is one of this deployment's, issued in the current slot or the one before.
    public func accepts(_ challenge: String, now: Date) -> Bool {
        guard challenge.utf8.count <= 64, let bytes = Base64URL.decode(challenge), bytes.count == 40 else { return false }
        let body = Array(bytes.prefix(24))
        guard ConstantTime.equal(Array(bytes.suffix(16)), mac(body)) else { return false }
        let issued = body.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let current = Int64(now.timeIntervalSince1970) / slot
        return issued == current || issued == current - 1
    }

    private func mac(_ body: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: body, using: key)).prefix(16).map { $0 }
    }
}
