import ModgudService

/// How the operator console is served (issue 31; docs/operations/console.md).
public struct ConsoleConfiguration: Sendable {
    /// The operator realm and the session limits.
    public var settings: OperatorConsole.Settings
    /// The session cookie's `Secure` attribute. Off only for plain HTTP on a loopback address
    /// (`modgud dev`); browsers then still send it only to this host and never cross-site.
    public var secureCookie: Bool
    /// Proxies whose `X-Forwarded-For` is believed (the rate-limit source of sign-in requests).
    public var trustedProxies: Set<String>
    /// The largest form accepted.
    public var maxBodyBytes = 64 * 1024
    /// Which `Host` names the console answers to (`MODGUD_CONSOLE_HOSTNAMES`; issue 67: on by
    /// default). A console request naming another host gets 421 and nothing else: a defence
    /// against DNS rebinding, where a page whose name is made to resolve to the console's
    /// address would otherwise use the operator's browser against it.
    public enum HostNames: Sendable, Equatable {
        /// Unset (the default): the console's own names (`ownHostnames`), the hosts of every
        /// realm and the console's RP-ID, as they are at the request (`ConsoleHostCheck`).
        case realmsAndOwn
        /// `*`: any host, as before issue 67 (the explicit opt-out).
        case any
        /// A list: these names only (lower case, no port, IPv6 without brackets).
        case only(Set<String>)
    }

    public var hostnames: HostNames = .realmsAndOwn
    /// The cells and their health for the health page (issue 71), when the instance serves
    /// cells (`MODGUD_DIRECTORY_URL`); nil for one database.
    public var cells: (@Sendable () async -> [CellHealth.Status])? = nil
    /// The console's own names, accepted by default besides the realms' hosts: the loopback
    /// names, and the host of each listener the console is served on (`ownHostnames(listeningOn:)`).
    public var ownHostnames: Set<String> = Self.loopbackNames

    /// The names of this machine's loopback interface.
    public static let loopbackNames: Set<String> = ["localhost", "127.0.0.1", "::1"]

    /// The names a listener bound to `host` is reached by: the loopback names (a tunnel or a
    /// local browser), and the bound host itself unless it is a wildcard address.
    public static func ownHostnames(listeningOn host: String) -> Set<String> {
        let name = hostName(of: host)
        return name.isEmpty || name == "0.0.0.0" || name == "::" ? loopbackNames : loopbackNames.union([name])
    }

    /// Whether a request's `Host` (authority) is one the console answers to.
    /// - Parameter isRealmHost: whether a realm serves the host, or it is the console's RP-ID
    ///   (asked only by the default, for a host that is not one of `ownHostnames`).
    func answers(to authority: String?, isRealmHost: (String) async throws -> Bool) async rethrows -> Bool {
        if hostnames == .any { return true }
        guard let authority, !authority.isEmpty else { return false }
        let host = Self.hostName(of: authority)
        switch hostnames {
        case .any: return true
        case .only(let names): return names.contains(host)
        case .realmsAndOwn: return ownHostnames.contains(host) ? true : try await isRealmHost(host)
        }
    }

    /// `Console.Example.com:8443` → `console.example.com`; `[::1]:80` → `::1`.
    static func hostName(of authority: String) -> String {
        let authority = authority.lowercased()
        if authority.hasPrefix("[") {
            let end = authority.firstIndex(of: "]") ?? authority.endIndex
            return String(authority[authority.index(after: authority.startIndex)..<end])
        }
        // A bare IPv6 address (a listener's host) has several colons and no port.
        if authority.filter({ $0 == ":" }).count > 1 { return authority }
        return String(authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    public init(settings: OperatorConsole.Settings = .init(), secureCookie: Bool = true, trustedProxies: Set<String> = []) {
        self.settings = settings
        self.secureCookie = secureCookie
        self.trustedProxies = trustedProxies
    }
}
