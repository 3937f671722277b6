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
        return try collect(sent, count: queries.count, handle: handle)
    }

    /// Queues each statement (preparing the ones this connection has not prepared yet).
    private func send(_ queries: [PQQuery], handle: OpaquePointer) throws(PQPipelineError) -> [PipelineItem] {
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
    private func collect(_ sent: [PipelineItem], count: Int, handle: OpaquePointer) throws(PQPipelineError) -> [PQResult] {
        var results: [PQResult] = []
        results.reserveCapacity(count)
        var firstError: PQPipelineError?
        for item in sent {
            let raw = PQgetResult(handle)
            // Each command's results end with a NULL.
            defer { while let extra = PQgetResult(handle) { PQclear(extra) } }
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
        // The sync point's own result.
        while let raw = PQgetResult(handle) {
            let status = PQresultStatus(raw)
            PQclear(raw)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let firstError { throw firstError }
        return results
    }
}

/// One item queued in a pipeline: a statement to prepare, or a query (by its index).
private enum PipelineItem {
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
