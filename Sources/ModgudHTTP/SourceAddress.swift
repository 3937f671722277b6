import Foundation
import Hummingbird

/// The rate-limit key of a request's source (docs/spec.md section 0): the peer address, or the
/// last `X-Forwarded-For` hop that is not a trusted proxy when the peer is one. IPv4
/// addresses count alone; IPv6 addresses by their /64 (one subscriber's network).
enum SourceAddress {
    static func key(peer: String?, forwardedFor: String?, trustedProxies: Set<String>) -> String {
        var address = peer ?? "unknown"
        if trustedProxies.contains(address), let forwardedFor {
            // Walk from the nearest hop back; the first untrusted one is the client.
            let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            for hop in hops.reversed() {
                address = hop
                if !trustedProxies.contains(hop) { break }
            }
        }
        return network(of: address)
    }

    /// `2001:db8:1:2:3:4:5:6` → `2001:db8:1:2::/64`; IPv4 and anything unparsable unchanged.
    static func network(of address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = [UInt8](repeating: 0, count: 16)
        let parsed = address.withCString { inet_pton(AF_INET6, $0, &bytes) } == 1
        guard parsed else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")  // IPv4-mapped
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// A source key made rough enough to show a person as "where the request came from" (the
    /// cross-device BCP's context for a device approval) and no more: an IPv4 address's /24,
    /// an IPv6 /64's /48. Nil for anything else.
    static func roughNetwork(of source: String) -> String? {
        let octets = source.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) {
            return octets.prefix(3).joined(separator: ".") + ".0/24"
        }
        guard source.hasSuffix("::/64") else { return nil }
        let groups = source.dropLast(5).split(separator: ":")
        guard groups.count == 4 else { return nil }
        return groups.prefix(3).joined(separator: ":") + "::/48"
    }
}
