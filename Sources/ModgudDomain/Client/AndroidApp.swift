import Foundation

/// An Android app that holds passkeys for a client's RP-ID (issue 15): its package name and
/// the SHA-256 fingerprints of its signing certificates, as `keytool -list -v` or the Play
/// Console print them (`AB:CD:…`, 32 bytes).
public struct AndroidApp: Codable, Hashable, Sendable {
    public var packageName: String
    /// Normalized: upper-case hex pairs joined by colons (the form assetlinks.json uses).
    public var sha256Fingerprints: [String]

    public init(packageName: String, sha256Fingerprints: [String]) {
        self.packageName = packageName
        self.sha256Fingerprints = sha256Fingerprints.map { Self.fingerprintBytes($0).map(Self.fingerprintText) ?? $0 }
    }

    /// The 32 bytes of a fingerprint written as hex, with or without colons; nil otherwise.
    public static func fingerprintBytes(_ text: String) -> [UInt8]? {
        let hex = Array(text.filter { $0 != ":" }.utf8)
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = nibble(hex[index]), let low = nibble(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// `AB:CD:…`
    public static func fingerprintText(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// The WebAuthn origin Android's Credential Manager reports for an app signed with this
    /// certificate: `android:apk-key-hash:` and the fingerprint's bytes in unpadded base64url.
    public static func origin(fingerprint: String) -> String? {
        fingerprintBytes(fingerprint).map { "android:apk-key-hash:" + Base64URLText.encode($0) }
    }

    /// `TEAMID.bundle.id`: a 10-character upper-case alphanumeric team id, a dot, a bundle id.
    public static func isAppleAppID(_ text: String) -> Bool {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 10, parts[0].allSatisfy({ ($0.isUppercase || $0.isNumber) && $0.isASCII }) else { return false }
        let bundle = parts[1]
        return !bundle.isEmpty && bundle.count <= 155
            && bundle.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
            && !bundle.hasPrefix(".") && !bundle.hasSuffix(".") && !bundle.contains("..")
    }

    /// Java-style: at least two dot-separated segments, each a letter then letters, digits or `_`.
    public static func isPackageName(_ text: String) -> Bool {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        return segments.count >= 2 && text.count <= 255
            && segments.allSatisfy { segment in
                guard let first = segment.first, first.isASCII, first.isLetter else { return false }
                return segment.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
