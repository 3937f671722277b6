import CLibPQ

extension PQConnection {
    /// Sends all statements in libpq pipeline mode and waits for their results in one round trip.
    ///
    /// Outside an explicit transaction the statements run in one implicit transaction: when
    /// one fails, the ones before it are rolled back and the ones after it are skipped, so
    /// the batch is atomic. Inside BEGIN … COMMIT a failure leaves the transaction aborted
    /// (the caller rolls back). Throws the first statement's error; `failedIndex` in the
    /// returned error's detail is not needed by callers, who get it through `PQPipelineError`.
    public func pipeline(_ queries: [PQQuery]) throws(PQPipelineError) -> [PQResult] {
        defer { recordLeaseState() }
        let handle: OpaquePointer
        do { handle = try liveHandle() } catch { throw PQPipelineError(index: nil, error: error) }
        if queries.isEmpty { return [] }
        PQRoundTrips.record()
        guard PQenterPipelineMode(handle) == 1 else {
            throw PQPipelineError(index: nil, error: connectionError(handle: handle))
        }
        defer { _ = PQexitPipelineMode(handle) }
        let sent = try send(queries, handle: handle)
        guard PQpipelineSync(handle) == 1 else {
            throw PQPipelineError(index: nil, error: connectionError(handle: handle))
        }
        return try collect(sent, count: queries.count, handle: handle) { PQgetResult(handle) }
    }

    /// Queues each statement (preparing the ones this connection has not prepared yet).
    nonisolated func send(_ queries: [PQQuery], handle: OpaquePointer) throws(PQPipelineError) -> [PipelineItem] {
        var sent: [PipelineItem] = []
        sent.reserveCapacity(queries.count * 2)
        var newNames: [StatementKey: String] = [:]
        for (index, query) in queries.enumerated() {
            let key = StatementKey(sql: query.sql, oids: query.binds.map(\.oid))
            var name = lookupPrepared(key) ?? newNames[key]
            if name == nil {
                let fresh = nextStatementName()
                let oids = key.oids
                let ok = oids.withUnsafeBufferPointer { types in
                    PQsendPrepare(handle, fresh, query.sql, Int32(oids.count), types.baseAddress)
                }
                guard ok == 1 else { throw PQPipelineError(index: index, error: connectionError(handle: handle)) }
                sent.append(.prepare(key, fresh))
                newNames[key] = fresh
                name = fresh
            }
            let ok = withParameterValues(query.binds) { values in
                PQsendQueryPrepared(handle, name!, Int32(query.binds.count), values, nil, nil, 0)
            }
            guard ok == 1 else { throw PQPipelineError(index: index, error: connectionError(handle: handle)) }
            sent.append(.query(index))
        }
        return sent
    }

    /// Reads every queued item's result, then the sync point's; throws the first failure.
    /// - Parameter next: libpq's next result (`PQgetResult`, or results already received).
    nonisolated func collect(
        _ sent: [PipelineItem], count: Int, handle: OpaquePointer, next: () -> OpaquePointer?
    ) throws(PQPipelineError) -> [PQResult] {
        var results: [PQResult] = []
        results.reserveCapacity(count)
        var firstError: PQPipelineError?
        for item in sent {
            let raw = next()
            // Each command's results end with a NULL.
            defer { while let extra = next() { PQclear(extra) } }
            guard let raw else {
                firstError = firstError ?? PQPipelineError(index: nil, error: connectionError(handle: handle))
                break
            }
            if PQresultStatus(raw) == PGRES_PIPELINE_ABORTED {
                PQclear(raw)
                continue
            }
            switch item {
            case .prepare(let key, let name):
                do {
                    _ = try check(raw, handle: handle)
                    rememberPrepared(key, name: name)
                } catch {
                    firstError = firstError ?? PQPipelineError(index: nil, error: error)
                }
            case .query(let index):
                do {
                    results.append(try check(raw, handle: handle))
                } catch {
                    firstError = firstError ?? PQPipelineError(index: index, error: error)
                }
            }
        }
        if let commitError = awaitSyncPoint(handle: handle, next: next) { firstError = firstError ?? commitError }
        if let firstError { throw firstError }
        return results
    }

    /// Reads up to the sync point, where the implicit transaction commits, and returns how the
    /// commit failed, if it did.
    ///
    /// The statements' results arrive before the commit: a commit that fails (a deferred
    /// constraint) answers with an error here, and one that never answers (the backend ended
    /// while it waited for a synchronous standby: committed locally, perhaps never replicated)
    /// ends the connection before the sync point. Either way the pipeline failed, whatever
    /// its statements said: reported as a success, a grant would answer with a token a
    /// promoted standby never had (issue 49, `ops/failover-test`).
    private nonisolated func awaitSyncPoint(handle: OpaquePointer, next: () -> OpaquePointer?) -> PQPipelineError? {
        var failure: PQPipelineError?
        // libpq ends each command's results with one NULL; two in a row mean nothing more is
        // coming, and a NULL from a failed connection means the same.
        var nulls = 0
        while nulls < 2 {
            guard let raw = next() else {
                nulls += 1
                if PQstatus(handle) != CONNECTION_OK { break }
                continue
            }
            nulls = 0
            let status = PQresultStatus(raw)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(raw)
                return failure
            }
            if status == PGRES_FATAL_ERROR {
                do { _ = try check(raw, handle: handle) } catch { failure = failure ?? PQPipelineError(index: nil, error: error) }
            } else {
                PQclear(raw)
            }
        }
        var lost = connectionError(handle: handle)
        if lost.code != .connectionLost {
            lost = PQError(.connectionLost, message: "the pipeline's commit was not confirmed: \(lost.message)")
        }
        return failure ?? PQPipelineError(index: nil, error: lost)
    }
}

/// One item queued in a pipeline: a statement to prepare, or a query (by its index).
enum PipelineItem {
    case prepare(PQConnection.StatementKey, String)
    case query(Int)
}

/// A failed pipeline: the error and, when known, the index of the statement that caused it.
public struct PQPipelineError: Error, Sendable, CustomStringConvertible {
    /// Index into the submitted statements, or nil when the failure was not a statement's.
    public var index: Int?
    /// The underlying error.
    public var error: PQError

    public init(index: Int?, error: PQError) {
        self.index = index
        self.error = error
    }

    public var description: String {
        "\(error)" + (index.map { " (statement \($0))" } ?? "")
    }
}
