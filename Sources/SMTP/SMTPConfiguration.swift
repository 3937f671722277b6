/// Where and how to deliver mail over SMTP (RFC 5321).
public struct SMTPConfiguration: Sendable, Equatable {
    /// How the connection is protected.
    public enum Security: String, Sendable, Equatable, CaseIterable {
        /// Plain connection upgraded with STARTTLS (RFC 3207); refused if the server does not offer it.
        case startTLS = "starttls"
        /// TLS from the first byte (port 465, RFC 8314).
        case tls
        /// No TLS at all: a local relay only. Authentication is refused on such a connection.
        case none
    }

    public var host: String
    public var port: Int
    public var security: Security
    /// Credentials for AUTH PLAIN or LOGIN (RFC 4954); nil: no authentication.
    public var username: String?
    public var password: String?
    /// The envelope and header sender (`no-reply@example.com`).
    public var from: String
    /// The name this client gives in EHLO.
    public var heloName: String
    /// Connect and per-reply timeout, in seconds.
    public var timeoutSeconds: Double
    /// PEM file of extra trust roots for the server's certificate (nil: the system's roots).
    public var trustRootsFile: String?
    /// The name the certificate must carry (nil: `host`). Set it when `host` is an IP address.
    public var tlsServerName: String?

    public init(
        host: String, port: Int = 587, security: Security = .startTLS, username: String? = nil, password: String? = nil,
        from: String, heloName: String = "localhost", timeoutSeconds: Double = 30, trustRootsFile: String? = nil,
        tlsServerName: String? = nil
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
        self.from = from
        self.heloName = heloName
        self.timeoutSeconds = timeoutSeconds
        self.trustRootsFile = trustRootsFile
        self.tlsServerName = tlsServerName
    }
}
