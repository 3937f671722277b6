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
    /// The host names the console answers to (`MODGUD_CONSOLE_HOSTNAMES`, lower case, no
    /// port); a request naming another host gets 421 and nothing else. A defence against DNS
    /// rebinding: a page whose name is made to resolve to the console's address cannot use the
    /// operator's browser against it. Empty: any host (the default, for loopback consoles).
    public var hostnames: Set<String> = []

    /// Whether a request's `Host` (authority) is one the console answers to.
    func answers(to authority: String?) -> Bool {
        guard !hostnames.isEmpty else { return true }
        guard let authority = authority?.lowercased() else { return false }
        let host: Substring =
            authority.hasPrefix("[")
            ? authority.prefix(through: authority.firstIndex(of: "]") ?? authority.index(before: authority.endIndex))
            : authority.split(separator: ":", maxSplits: 1).first ?? ""
        return hostnames.contains(String(host))
    }

    public init(settings: OperatorConsole.Settings = .init(), secureCookie: Bool = true, trustedProxies: Set<String> = []) {
        self.settings = settings
        self.secureCookie = secureCookie
        self.trustedProxies = trustedProxies
    }
}
