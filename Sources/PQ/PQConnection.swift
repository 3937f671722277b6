import CLibPQ
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One connection to PostgreSQL, its blocking libpq calls run on its own thread.
///
/// The actor's executor is a `ThreadExecutor`, so its blocking libpq calls never occupy
/// Swift's cooperative pool. Methods are synchronous inside the actor: use `run` or
/// `transaction` to do several statements in one hop, `query` for one. The hot path's
/// statements skip the hop: `pipelineInPlace` and `queryInPlace` run on the calling task with
/// libpq non-blocking (`PQConnection+WithoutItsThread`).
///
/// Statements are prepared once per connection and reused (keyed by SQL text and
/// parameter types), which spares the server a parse and plan on every call.
public actor PQConnection {
    private let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    // The connection's libpq state. Isolated in effect, not by the compiler: the actor's own
    // methods and the calling task's non-blocking statements (`PQConnection+WithoutItsThread`)
    // both touch it, and they never run at once, because one task at a time holds a connection
    // (the pool's lease, or a dedicated connection's owner) and awaits each call.
    nonisolated(unsafe) var handle: OpaquePointer?
    nonisolated(unsafe) var prepared: [StatementKey: String] = [:]
    nonisolated(unsafe) var nextStatement = 0
    /// Prepared statements kept per connection before the cache is reset.
    let preparedLimit = 512

    /// The server process serving this connection (`pg_backend_pid()`).
    public private(set) var backendPID: Int32 = 0

    /// Set when the server answered 25006 (read-only transaction): this connection reached a
    /// standby, or a primary that was demoted. The pool then discards it, and the next
    /// connection lets libpq choose again (`target_session_attrs=read-write`), so a switchover
    /// costs a few 503s, not every later request on the old connection (issue 26).
    nonisolated(unsafe) private var reachedReadOnlyServer = false

    /// Set when an in-place statement's wait on the socket failed (`PQSocketWaiter`: the socket
    /// closed or replaced under it, epoll failing): libpq's state is then unusable, so the
    /// connection counts as broken (the pool discards it) and its next use resets it (issue 67).
    nonisolated(unsafe) var lostInPlace = false

    /// What the pool needs to know when the connection comes back, readable without a hop.
    private nonisolated let leaseState = Atomic<UInt8>(LeaseState.idle.rawValue)

    /// The connection's state after its last operation.
    public enum LeaseState: UInt8, Sendable {
        /// Idle and healthy: ready for the next caller.
        case idle = 0
        /// A transaction is still open: roll back before reuse.
        case inTransaction = 1
        /// Broken or closed: discard.
        case broken = 2
    }

    /// The state after the last operation (read by the pool without hopping onto the connection's thread).
    public nonisolated var stateAfterLastOperation: LeaseState {
        LeaseState(rawValue: leaseState.load(ordering: .acquiring)) ?? .broken
    }

    /// Records the state for the pool; called at the end of every public operation.
    nonisolated func recordLeaseState() {
        let state: LeaseState
        if let handle, !reachedReadOnlyServer, !lostInPlace, PQstatus(handle) == CONNECTION_OK, PQpipelineStatus(handle) == PQ_PIPELINE_OFF {
            // A connection still in pipeline mode (a pipeline cut off mid-way, say by a server
            // shutting down before libpq noticed the closed socket) accepts no plain command
            // again: it counts as broken, so the pool discards it.
            state = PQtransactionStatus(handle) == PQTRANS_IDLE ? .idle : .inTransaction
        } else {
            state = .broken
        }
        leaseState.store(state.rawValue, ordering: .releasing)
    }

    /// Opens a connection.
    /// - Throws: `PQError` with code `.connectionFailed` and libpq's message.
    public static func connect(_ configuration: PQConfiguration) async throws(PQError) -> PQConnection {
        let connection = PQConnection(executor: ThreadExecutor(name: "pq"))
        try await connection.open(configuration)
        return connection
    }

    private init(executor: ThreadExecutor) {
        self.executor = executor
    }

    isolated deinit {
        if let handle { PQfinish(handle) }
    }

    private func open(_ configuration: PQConfiguration) throws(PQError) {
        switch Self.open(configuration) {
        case .success(let opened):
            handle = opened
            backendPID = PQbackendPID(opened)
        case .failure(let error):
            throw error
        }
    }

    private static func open(_ configuration: PQConfiguration) -> Result<OpaquePointer, PQError> {
        let pairs = configuration.keywordsAndValues
        let keywords = pairs.map { strdup($0.0) } + [nil]
        let values = pairs.map { strdup($0.1) } + [nil]
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection = keywords.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v in
                k.withMemoryRebound(to: UnsafePointer<CChar>?.self) { kp in
                    v.withMemoryRebound(to: UnsafePointer<CChar>?.self) { vp in
                        PQconnectdbParams(kp.baseAddress, vp.baseAddress, 1)
                    }
                }
            }
        }
        guard let connection else {
            return .failure(PQError(.connectionFailed, message: "libpq could not allocate a connection"))
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
            PQfinish(connection)
            return .failure(
                PQError(.connectionFailed, message: "\(message) [\(configuration.redactedDescription)]"))
        }
        modgud_silence_notices(connection)
        return .success(connection)
    }

    // MARK: Running work on the connection's thread

    /// Runs `body` on the connection's thread with synchronous access to the connection.
    public func run<T: Sendable>(_ body: @Sendable (isolated PQConnection) throws -> T) throws -> T {
        defer { recordLeaseState() }
        return try body(self)
    }

    /// Runs `body` inside BEGIN … COMMIT; any error rolls back and is rethrown.
    public func transaction<T: Sendable>(_ body: @Sendable (isolated PQConnection) throws -> T) throws -> T {
        defer { recordLeaseState() }
        try execute("BEGIN")
        do {
            let value = try body(self)
            try execute("COMMIT")
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Rolls back an open transaction, ignoring errors (the connection may be broken).
    public func rollbackQuietly() {
        defer { recordLeaseState() }
        guard let handle, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    // MARK: Statements

    /// Executes one statement with its bound parameters and returns its rows.
    @discardableResult
    public func query(_ query: PQQuery) throws(PQError) -> PQResult {
        defer { recordLeaseState() }
        let handle = try liveHandle()
        let name = try preparedName(for: query, handle: handle)
        PQRoundTrips.record()
        let result = withParameterValues(query.binds) { values in
            PQexecPrepared(handle, name, Int32(query.binds.count), values, nil, nil, 0)
        }
        return try check(result, handle: handle)
    }

    /// Executes SQL text without parameters (several statements allowed; used for migrations).
    public func execute(_ sql: String) throws(PQError) {
        defer { recordLeaseState() }
        let handle = try liveHandle()
        PQRoundTrips.record()
        let result = PQexec(handle, sql)
        _ = try check(result, handle: handle)
    }

    /// Whether a transaction is open on this connection.
    public var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// True once libpq has seen the connection fail or it was closed.
    public var isBroken: Bool {
        guard let handle else { return true }
        return PQstatus(handle) != CONNECTION_OK
    }

    /// Closes the connection; later calls throw `.closed`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
        recordLeaseState()
    }

    // MARK: Internals shared with the pipeline and LISTEN extensions

    /// The connection handle, reconnected first if the server dropped it while it was idle.
    ///
    /// A backend ended by `pg_terminate_backend`, a restart or an idle timeout sends an error
    /// and closes its socket. Between transactions nothing is lost by reconnecting, so an
    /// idle connection whose socket has something to say is checked and, if dead, reset
    /// (`PQreset`) before it is used. Inside a transaction a dead connection is an error.
    /// - Parameter reconnect: false for a LISTEN connection, whose subscriptions a reset would lose.
    func liveHandle(reconnect: Bool = true) throws(PQError) -> OpaquePointer {
        guard let handle else { throw PQError(.closed, message: "the connection is closed") }
        guard reconnect else { return handle }
        guard PQtransactionStatus(handle) == PQTRANS_IDLE || PQstatus(handle) != CONNECTION_OK || lostInPlace else { return handle }
        // An idle connection that is not listening should receive nothing. Input here is the
        // server's goodbye (a FATAL error, then the socket closing a moment later), so the
        // connection is reset as soon as anything arrives, without waiting for the close. A
        // failed poll (not EINTR, which it retries) counts as input: the connection is reset.
        let hasInput = modgud_poll_one(PQsocket(handle), Int16(POLLIN), 0) != 0
        if hasInput || lostInPlace || PQstatus(handle) != CONNECTION_OK {
            prepared.removeAll()
            lostInPlace = false
            PQreset(handle)
            guard PQstatus(handle) == CONNECTION_OK else {
                throw PQError(.connectionLost, message: String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines())
            }
            modgud_silence_notices(handle)
            backendPID = PQbackendPID(handle)
        }
        return handle
    }

    nonisolated func check(_ result: OpaquePointer?, handle: OpaquePointer) throws(PQError) -> PQResult {
        guard let result else {
            throw connectionError(handle: handle)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return PQResult(taking: result)
        }
        let error = Self.error(from: result, handle: handle)
        PQclear(result)
        if error.sqlState == "25006" { reachedReadOnlyServer = true }
        throw error
    }

    nonisolated func connectionError(handle: OpaquePointer) -> PQError {
        let message = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()
        let code: PQError.Code = PQstatus(handle) == CONNECTION_OK ? .client : .connectionLost
        return PQError(code, message: message.isEmpty ? "no result from libpq" : message)
    }

    static func error(from result: OpaquePointer, handle: OpaquePointer) -> PQError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(modgud_pg_diag_sqlstate)
        var message = field(modgud_pg_diag_message_primary)
            ?? String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines()
        if message.isEmpty { message = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines() }
        let lost = PQstatus(handle) != CONNECTION_OK
            || (sqlState.map { $0.hasPrefix("08") || $0.hasPrefix("57P0") } ?? false)
        return PQError(
            lost ? .connectionLost : .server,
            message: message,
            sqlState: sqlState,
            detail: field(modgud_pg_diag_message_detail),
            constraint: field(modgud_pg_diag_constraint_name)
        )
    }

    /// Calls `body` with C strings for the parameter values (NULL for SQL NULL).
    nonisolated func withParameterValues<R>(_ binds: [PQBind], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        if binds.isEmpty { return body(nil) }
        let copies: [UnsafeMutablePointer<CChar>?] = binds.map { bind in bind.text.map { strdup($0) } }
        defer { copies.forEach { free($0) } }
        return copies.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { body($0.baseAddress) }
        }
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text.removeLast() }
        return text
    }
}
