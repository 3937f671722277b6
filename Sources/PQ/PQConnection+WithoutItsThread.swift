import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Statements run by the calling task itself (issue 49, item 2): libpq in non-blocking mode,
/// the task suspended on the socket (`PQSocketWaiter`) while the server works, instead of the
/// call handed to the connection's thread, which blocks in libpq until the answer.
///
/// The caller must hold the connection alone and await each call (a pool lease does both),
/// as for every other method. Anything these paths do not handle falls back to the thread: a
/// connection that must be reset first, an open transaction, a statement this connection has
/// not prepared yet (for a lone statement), a full statement cache, no epoll (or a waiter
/// stopped by an epoll failure), or `MODGUD_PQ_THREAD_ONLY=1` (the A/B switch).
///
/// A wait on the socket that fails (`PQError.Code.socketWaitFailed`: the socket closed or
/// replaced under the waiter, epoll failing) fails the statement with that error and marks the
/// connection lost (`lostInPlace`): the pool discards it, and a dedicated connection is reset
/// on its next use.
extension PQConnection {
    /// Whether the in-place paths are used (unless `MODGUD_PQ_THREAD_ONLY=1`).
    static let runsInPlace: Bool = {
        #if os(Linux)
        guard let value = getenv("MODGUD_PQ_THREAD_ONLY") else { return PQSocketWaiter.shared != nil }
        return String(cString: value) != "1" && PQSocketWaiter.shared != nil
        #else
        return false
        #endif
    }()

    /// `pipeline(_:)`, run by the calling task: one round trip, one implicit transaction.
    public nonisolated func pipelineInPlace(_ queries: [PQQuery]) async throws(PQPipelineError) -> [PQResult] {
        #if os(Linux)
        guard Self.runsInPlace, !queries.isEmpty, let waiter = PQSocketWaiter.shared, waiter.isAccepting, let handle = handleReadyInPlace() else {
            return try await pipeline(queries)
        }
        defer { recordLeaseState() }
        PQRoundTrips.record(inPlace: true)
        guard PQsetnonblocking(handle, 1) == 0, PQenterPipelineMode(handle) == 1 else {
            _ = PQsetnonblocking(handle, 0)
            throw PQPipelineError(index: nil, error: connectionError(handle: handle))
        }
        defer {
            _ = PQexitPipelineMode(handle)
            _ = PQsetnonblocking(handle, 0)
        }
        let sent = try send(queries, handle: handle)
        guard PQpipelineSync(handle) == 1 else {
            throw PQPipelineError(index: nil, error: connectionError(handle: handle))
        }
        do { try await flush(handle, waiter) } catch { throw PQPipelineError(index: nil, error: error) }
        let received: [OpaquePointer?]
        do { received = try await receiveThroughSyncPoint(handle, waiter) } catch { throw PQPipelineError(index: nil, error: error) }
        var results = received.makeIterator()
        return try collect(sent, count: queries.count, handle: handle) { results.next() ?? nil }
        #else
        return try await pipeline(queries)
        #endif
    }

    /// `query(_:)`, run by the calling task, for a statement this connection has prepared
    /// (the first use of one prepares it on the connection's thread).
    public nonisolated func queryInPlace(_ query: PQQuery) async throws(PQError) -> PQResult {
        #if os(Linux)
        let key = StatementKey(sql: query.sql, oids: query.binds.map(\.oid))
        guard Self.runsInPlace, let waiter = PQSocketWaiter.shared, waiter.isAccepting, let handle = handleReadyInPlace(),
            let name = lookupPrepared(key)
        else {
            return try await self.query(query)
        }
        defer { recordLeaseState() }
        PQRoundTrips.record(inPlace: true)
        guard PQsetnonblocking(handle, 1) == 0 else { throw connectionError(handle: handle) }
        defer { _ = PQsetnonblocking(handle, 0) }
        let sent = withParameterValues(query.binds) { values in
            PQsendQueryPrepared(handle, name, Int32(query.binds.count), values, nil, nil, 0)
        }
        guard sent == 1 else { throw connectionError(handle: handle) }
        try await flush(handle, waiter)
        // As `PQexecPrepared` does: the last result, unless an error came first (a connection
        // that ends before the commit answers reports it after the statement's rows).
        var kept: OpaquePointer?
        do {
            while let raw = try await nextResult(handle, waiter) {
                if let kept, PQresultStatus(kept) == PGRES_FATAL_ERROR {
                    PQclear(raw)
                    continue
                }
                if let kept { PQclear(kept) }
                kept = raw
            }
        } catch {
            if let kept { PQclear(kept) }
            throw error
        }
        return try check(kept, handle: handle)
        #else
        return try await self.query(query)
        #endif
    }

    #if os(Linux)
    /// The handle, when the in-place paths can use it as it is: healthy, idle, outside a
    /// transaction and a pipeline, and with nothing to read (input on an idle connection is
    /// the server's goodbye, which the thread's path answers with a reset).
    private nonisolated func handleReadyInPlace() -> OpaquePointer? {
        guard let handle, !lostInPlace, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE,
            PQpipelineStatus(handle) == PQ_PIPELINE_OFF, prepared.count < preparedLimit
        else { return nil }
        // Input, a failed poll or a bad descriptor (POLLNVAL): the thread's path sorts it out.
        return modgud_poll_one(PQsocket(handle), Int16(POLLIN), 0) == 0 ? handle : nil
    }

    /// Suspends until the socket is ready; a failed wait marks the connection lost.
    private nonisolated func wait(
        _ waiter: PQSocketWaiter, for readiness: PQSocketWaiter.Readiness, on handle: OpaquePointer
    ) async throws(PQError) {
        do {
            try await waiter.wait(for: readiness, on: PQsocket(handle))
        } catch {
            // Mid-statement, with the socket gone or unwatchable: nothing libpq holds is usable.
            lostInPlace = true
            throw error
        }
    }

    /// Sends what libpq has buffered, suspending while the socket cannot take more.
    private nonisolated func flush(_ handle: OpaquePointer, _ waiter: PQSocketWaiter) async throws(PQError) {
        while true {
            switch PQflush(handle) {
            case 0: return
            case 1:
                try await wait(waiter, for: .writable, on: handle)
                // libpq's advice: read what the server sent meanwhile, so neither side stalls.
                guard PQconsumeInput(handle) == 1 else { throw connectionError(handle: handle) }
            default: throw connectionError(handle: handle)
            }
        }
    }

    /// The next result, suspending until libpq can return it without blocking. After a lost
    /// connection libpq returns its error and then NULLs without waiting.
    /// - Throws: the socket wait's failure (`.socketWaitFailed`).
    private nonisolated func nextResult(_ handle: OpaquePointer, _ waiter: PQSocketWaiter) async throws(PQError) -> OpaquePointer? {
        while PQisBusy(handle) == 1 && PQstatus(handle) == CONNECTION_OK {
            try await wait(waiter, for: .readable, on: handle)
            if PQconsumeInput(handle) == 0 { break }
        }
        return PQgetResult(handle)
    }

    /// Every result of a pipeline up to and including its sync point's, as `PQgetResult` would
    /// return them one by one (NULLs included), so that `collect` reads them unchanged.
    /// - Throws: the socket wait's failure, after clearing what was received.
    private nonisolated func receiveThroughSyncPoint(_ handle: OpaquePointer, _ waiter: PQSocketWaiter) async throws(PQError) -> [OpaquePointer?] {
        var received: [OpaquePointer?] = []
        var nulls = 0
        while nulls < 2 {
            let raw: OpaquePointer?
            do { raw = try await nextResult(handle, waiter) } catch {
                for case let result? in received { PQclear(result) }
                throw error
            }
            received.append(raw)
            guard let raw else {
                nulls += 1
                if PQstatus(handle) != CONNECTION_OK { break }
                continue
            }
            nulls = 0
            if PQresultStatus(raw) == PGRES_PIPELINE_SYNC { break }
        }
        return received
    }
    #endif
}
