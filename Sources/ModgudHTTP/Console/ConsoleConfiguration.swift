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

    public init(settings: OperatorConsole.Settings = .init(), secureCookie: Bool = true, trustedProxies: Set<String> = []) {
        self.settings = settings
        self.secureCookie = secureCookie
        self.trustedProxies = trustedProxies
    }
}
