import Crypto
import Foundation

/// Seals what a server-side row says with a key only the holder of a bearer secret can derive
/// (an `auth_session` token, an authorization code): the row is found by the secret's SHA-256
/// and opened with HKDF-SHA-256 of the secret (RFC 5869), AES-256-GCM with the row's context
/// as associated data. The database alone reads nothing: no address, no code, no token.
enum BearerSeal {
    /// Seals `value` (JSON) under `secret`, bound to `context` (realm, client, purpose).
    static func seal(_ value: some Encodable, secret: String, context: String) throws -> [UInt8] {
        let plain = try JSONEncoder().encode(value)
        let box = try AES.GCM.seal(plain, using: key(secret, context), authenticating: Array(context.utf8))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return Array(combined)
    }

    /// Opens what `seal` made with the same secret and context; nil when either differs.
    static func open<T: Decodable>(_ type: T.Type, _ sealed: [UInt8], secret: String, context: String) -> T? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let plain = try? AES.GCM.open(box, using: key(secret, context), authenticating: Array(context.utf8))
        else { return nil }
        return try? JSONDecoder().decode(T.self, from: plain)
    }

    private static func key(_ secret: String, _ context: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Array(secret.utf8)), info: Array("modgud first-party seal v1 \(context)".utf8), outputByteCount: 32)
    }
}
