import Crypto
import Foundation
import WebAuthn

/// Play Integrity tokens of classic requests as Google's servers make them (issue 47), for a
/// test app's own keys: a compact JWE (`{"alg":"A256KW","enc":"A256GCM"}`: the CEK wrapped
/// with the decryption key, a 12-byte IV, the ciphertext, a 16-byte tag; the protected header
/// as additional data) of a compact JWS (ES256, `r || s`) of the verdict JSON.
public struct PlayIntegrityForge: Sendable {
    public let decryptionKey = SymmetricKey(size: .bits256)
    public let signingKey = P256.Signing.PrivateKey()

    public init() {}

    /// The Play Console's two keys, as it shows them: base64 of the AES key, base64 of the DER public key.
    public var consoleKeys: (decryption: String, verification: String) {
        (decryptionKey.withUnsafeBytes { Data($0) }.base64EncodedString(), signingKey.publicKey.derRepresentation.base64EncodedString())
    }

    /// A verdict as "Integrity verdicts" shows it, for a genuine app on a genuine device.
    public static func verdict(packageName: String, nonce: String, certificateDigest: [UInt8], at date: Date) -> [String: Any] {
        [
            "requestDetails": ["requestPackageName": packageName, "nonce": nonce, "timestampMillis": String(Int64(date.timeIntervalSince1970 * 1000))],
            "appIntegrity": [
                "appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": packageName, "certificateSha256Digest": [Base64URL.encode(certificateDigest)],
                "versionCode": "42",
            ],
            "deviceIntegrity": ["deviceRecognitionVerdict": ["MEETS_DEVICE_INTEGRITY"]],
            "accountDetails": ["appLicensingVerdict": "LICENSED"],
        ]
    }

    /// The integrity token of `verdict`, signed by `signingKey` and encrypted to `decryptionKey`.
    public func token(_ verdict: [String: Any]) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8))
        let payload = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: verdict, options: [.sortedKeys])))
        let signature = try signingKey.signature(for: Array("\(header).\(payload)".utf8)).rawRepresentation
        let jws = "\(header).\(payload).\(Base64URL.encode(Array(signature)))"
        let protected = Base64URL.encode(Array(#"{"alg":"A256KW","enc":"A256GCM"}"#.utf8))
        let cek = SymmetricKey(size: .bits256)
        let wrapped = try AES.KeyWrap.wrap(cek, using: decryptionKey)
        let sealed = try AES.GCM.seal(Array(jws.utf8), using: cek, nonce: AES.GCM.Nonce(), authenticating: Array(protected.utf8))
        return [protected, Base64URL.encode(Array(wrapped)), Base64URL.encode(Array(sealed.nonce)), Base64URL.encode(Array(sealed.ciphertext)),
            Base64URL.encode(Array(sealed.tag))].joined(separator: ".")
    }
}
