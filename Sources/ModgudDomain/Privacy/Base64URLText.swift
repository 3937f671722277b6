import Foundation

/// Unpadded base64url for the domain and service layers (the WebAuthn library has its own,
/// on purpose: it depends on nothing of ours).
public enum Base64URLText {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * UInt32(offset)) }
            for position in 0...chunk.count { out.append(alphabet[Int(value >> (18 - 6 * UInt32(position)) & 63)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded (or padded) base64url; nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !standard.contains("=") || text.hasSuffix("=") else { return nil }
        standard = standard.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
