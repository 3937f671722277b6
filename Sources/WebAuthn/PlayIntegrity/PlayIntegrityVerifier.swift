import Crypto
import Foundation

/// A Play Integrity verdict from a *classic* request, decrypted and verified locally with the
/// keys the app's owner downloads from the Play Console (issue 47), as Google's "Make a classic
/// API request" describes the token: a compact JWE (`alg` A256KW, `enc` A256GCM) of a compact JWS
/// (ES256). Tokens of *standard* requests can be decrypted only by Google's servers.
///
/// The verdict's checks ("Integrity verdicts"): the package asked for and the package
/// recognized, a registered signing certificate, `PLAY_RECOGNIZED`, a device that meets
/// `MEETS_DEVICE_INTEGRITY` (or `MEETS_STRONG_INTEGRITY`), the nonce the server expects, and
/// the age of the request.
public struct PlayIntegrityVerifier: Sendable {
    /// What a verified verdict says.
    public struct Verdict: Sendable, Equatable {
        public var packageName: String
        public var deviceLabels: [String]
        public var timestamp: Date
    }

    public static let format = "play-integrity"
    /// The refusal of a token encrypted to another app's key (a caller holding several apps'
    /// keys tries the next).
    public static let undecryptable = "the token does not decrypt with this app's decryption key"

    /// The Play Console's response decryption key (AES-256).
    let decryptionKey: SymmetricKey
    /// The Play Console's response verification key (EC P-256).
    let verificationKey: P256.Signing.PublicKey
    /// How old a verdict may be.
    public var maxAge: TimeInterval

    /// - Parameters:
    ///   - decryptionKey: the Play Console's base64 decryption key (32 bytes).
    ///   - verificationKey: the Play Console's base64 verification key (DER SubjectPublicKeyInfo).
    /// - Throws: `WebAuthnError.attestationInvalid` when either is not such a key.
    public init(decryptionKey: String, verificationKey: String, maxAge: TimeInterval = 300) throws(WebAuthnError) {
        guard let aes = Data(base64Encoded: decryptionKey), aes.count == 32 else {
            throw .attestationInvalid(format: Self.format, reason: "the decryption key is not 32 bytes of base64")
        }
        guard let der = Data(base64Encoded: verificationKey), let key = try? P256.Signing.PublicKey(derRepresentation: der) else {
            throw .attestationInvalid(format: Self.format, reason: "the verification key is not a base64 DER P-256 public key")
        }
        self.decryptionKey = SymmetricKey(data: aes)
        self.verificationKey = key
        self.maxAge = maxAge
    }

    /// Decrypts and verifies `token`, then checks the verdict.
    /// - Parameters:
    ///   - nonce: the nonce the app was told to send (base64url, no padding).
    ///   - packageName: the app's package, one of the client's.
    ///   - certificateDigests: the SHA-256 digests of the app's registered signing certificates.
    /// - Throws: `WebAuthnError.attestationInvalid` naming the check.
    public func verify(_ token: String, nonce: String, packageName: String, certificateDigests: Set<[UInt8]>, now: Date = Date())
        throws(WebAuthnError) -> Verdict
    {
        let payload = try verifiedPayload(try decrypted(token))
        guard let claims = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else { throw refused("the verdict is not JSON") }
        // requestDetails: first, as Google advises.
        let request = claims["requestDetails"] as? [String: Any] ?? [:]
        guard request["requestPackageName"] as? String == packageName else { throw refused("requestPackageName is not the app's package") }
        guard let sent = request["nonce"] as? String, Self.sameNonce(sent, nonce) else { throw refused("the nonce is not the one this server expects") }
        guard let millis = Self.number(request["timestampMillis"]) else { throw refused("timestampMillis is missing") }
        let timestamp = Date(timeIntervalSince1970: millis / 1000)
        guard abs(now.timeIntervalSince(timestamp)) <= maxAge else { throw refused("the verdict is older than \(Int(maxAge)) s") }
        // appIntegrity: Google Play knows this build, of this package, signed with a registered certificate.
        let app = claims["appIntegrity"] as? [String: Any] ?? [:]
        guard app["appRecognitionVerdict"] as? String == "PLAY_RECOGNIZED" else { throw refused("appRecognitionVerdict is not PLAY_RECOGNIZED") }
        guard app["packageName"] as? String == packageName else { throw refused("the recognized package is not the app's") }
        let digests = (app["certificateSha256Digest"] as? [String] ?? []).compactMap { Base64URL.decode($0.replacingOccurrences(of: "=", with: "")) }
        guard !digests.isEmpty, digests.allSatisfy(certificateDigests.contains) else {
            throw refused("the app's signing certificate is not one registered for \(packageName)")
        }
        // deviceIntegrity: a genuine Android device with Play services.
        let labels = (claims["deviceIntegrity"] as? [String: Any])?["deviceRecognitionVerdict"] as? [String] ?? []
        guard labels.contains("MEETS_DEVICE_INTEGRITY") || labels.contains("MEETS_STRONG_INTEGRITY") else {
            throw refused("the device does not meet MEETS_DEVICE_INTEGRITY")
        }
        return Verdict(packageName: packageName, deviceLabels: labels, timestamp: timestamp)
    }

    /// RFC 7516 section 5.2: the five parts, the CEK unwrapped with A256KW (RFC 3394), the
    /// ciphertext opened with A256GCM under the protected header as additional data.
    func decrypted(_ token: String) throws(WebAuthnError) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 65_536, parts.count == 5, let headerBytes = Base64URL.decode(parts[0]),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any]
        else { throw refused("the token is not a compact JWE") }
        guard header["alg"] as? String == "A256KW", header["enc"] as? String == "A256GCM" else { throw refused("the JWE is not A256KW with A256GCM") }
        guard let wrapped = Base64URL.decode(parts[1]), let iv = Base64URL.decode(parts[2]), let ciphertext = Base64URL.decode(parts[3]),
            let tag = Base64URL.decode(parts[4]), iv.count == 12, tag.count == 16,
            let cek = try? AES.KeyWrap.unwrap(wrapped, using: decryptionKey),
            let box = try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag),
            let plaintext = try? AES.GCM.open(box, using: cek, authenticating: Array(parts[0].utf8)),
            let text = String(bytes: plaintext, encoding: .utf8)
        else { throw refused(Self.undecryptable) }
        return text
    }

    /// RFC 7515: an ES256 JWS by the verification key; its payload.
    func verifiedPayload(_ jws: String) throws(WebAuthnError) -> [UInt8] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any], header["alg"] as? String == "ES256",
            let payload = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { throw refused("the verdict is not an ES256 JWS") }
        guard verificationKey.isValidSignature(parsed, for: Array("\(parts[0]).\(parts[1])".utf8)) else {
            throw refused("the verdict is not signed with this app's verification key")
        }
        return payload
    }

    /// Nonces compared as base64url without padding (Google's examples use URL-safe, no-wrap).
    static func sameNonce(_ sent: String, _ expected: String) -> Bool {
        let strip = { (text: String) in text.replacingOccurrences(of: "=", with: "") }
        return strip(sent) == strip(expected)
    }

    /// `timestampMillis`: a JSON string in Google's samples, a number in others.
    static func number(_ value: Any?) -> Double? {
        if let text = value as? String { return Double(text) }
        return (value as? NSNumber)?.doubleValue
    }

    private func refused(_ reason: String) -> WebAuthnError {
        .attestationInvalid(format: Self.format, reason: reason)
    }
}
