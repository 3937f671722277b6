/// An error from libpq or the PostgreSQL server.
///
/// One struct with an extensible `Code` (the postgres-nio habit) so callers switch on
/// what went wrong, and `sqlState` carries the server's five-character SQLSTATE when the
/// server reported the error.
public struct PQError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// Could not connect (bad URL, server down, authentication failed).
        public static let connectionFailed = Code(name: "connectionFailed")
        /// The connection broke while in use; it is discarded by the pool.
        public static let connectionLost = Code(name: "connectionLost")
        /// The server rejected the statement; see `sqlState`.
        public static let server = Code(name: "server")
        /// No pooled connection became free within the pool's timeout.
        public static let poolTimeout = Code(name: "poolTimeout")
        /// The pool or connection was closed.
        public static let closed = Code(name: "closed")
        /// A value could not be decoded into the requested Swift type.
        public static let decoding = Code(name: "decoding")
        /// libpq refused the call (for example a pipeline that could not start).
        public static let client = Code(name: "client")
        /// Waiting for the connection's socket failed (`PQSocketWaiter`: the socket closed or
        /// replaced under the waiter, or epoll itself failed); `errorNumber` holds the errno.
        /// The connection counts as lost: the pool discards it, a dedicated one is reset.
        public static let socketWaitFailed = Code(name: "socketWaitFailed")
        public var description: String { name }
    }

    public var code: Code
    /// The server's SQLSTATE (for example `23505` unique violation, `57P01` admin shutdown).
    public var sqlState: String?
    /// The primary message.
    public var message: String
    /// The server's DETAIL line, if any.
    public var detail: String?
    /// The violated constraint's name, if any.
    public var constraint: String?
    /// The operating system's error number (`errno`), for a failed system call.
    public var errorNumber: Int32?

    public init(
        _ code: Code, message: String, sqlState: String? = nil, detail: String? = nil, constraint: String? = nil,
        errorNumber: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
        self.errorNumber = errorNumber
    }

    public var description: String {
        var text = "PQError.\(code)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if let errorNumber { text += " [errno \(errorNumber)]" }
        return text
    }

    /// A lost or failed connection (a failed socket wait included), SQLSTATE class 08
    /// (connection exception) or 57P0x (the server shut the session down).
    public var isConnectionFailure: Bool {
        if code == .connectionLost || code == .connectionFailed || code == .socketWaitFailed { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P0")
    }
}
