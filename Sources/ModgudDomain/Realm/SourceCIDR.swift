#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An address range in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or one address), for
/// rate-limit allowlists. Matches the rate limiter's source keys: an IPv4 address, or an IPv6
/// /64 written `2001:db8:1:2::/64` (its network address is compared).
public struct SourceCIDR: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]
    public let prefix: Int

    /// nil when `text` is not an IPv4 or IPv6 address with an optional prefix length in range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let bytes = Self.address(first) else { return nil }
        let maximum = bytes.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : maximum
        guard let prefix, (0...maximum).contains(prefix) else { return nil }
        self.bytes = bytes
        self.prefix = prefix
    }

    /// Whether a rate-limit source key (an address, or an IPv6 `…::/64` network) lies in the range.
    public func contains(sourceKey: String) -> Bool {
        let address = sourceKey.split(separator: "/").first.map(String.init) ?? sourceKey
        guard let other = Self.address(address), other.count == bytes.count else { return false }
        var remaining = prefix
        for index in bytes.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if bytes[index] & mask != other[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String {
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        var buffer = [CChar](repeating: 0, count: 64)
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(text)/\(prefix)"
    }

    private static func address(_ text: String) -> [UInt8]? {
        var v4 = [UInt8](repeating: 0, count: 4)
        if text.withCString({ inet_pton(AF_INET, $0, &v4) }) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if text.withCString({ inet_pton(AF_INET6, $0, &v6) }) == 1 { return v6 }
        return nil
    }
}
