/// The HTTP server's protective limits (docs/configuration.md: `MODGUD_HTTP_*`).
public struct ServerLimits: Sendable, Equatable {
    /// Time from a connection's start until the first request's head is complete.
    public var headerTimeout: Duration
    /// Time from a request's head until its body is complete.
    public var bodyTimeout: Duration
    /// Time an idle keep-alive connection waits for the next request's head.
    public var idleTimeout: Duration
    /// Open connections at most; past it the server stops accepting until one closes
    /// (the kernel's listen backlog holds the rest).
    public var maxConnections: Int

    public init(
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(60),
        maxConnections: Int = 4096
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}
