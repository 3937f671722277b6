extension PQError {
    /// The database cannot serve now but may soon: the connection was refused or lost, the
    /// pool had no free connection in time, the server is shutting down or starting up
    /// (57P01–57P03), has too many connections (53300), or is a read-only standby after a
    /// failover (25006). Callers answer 503 and retry later; nothing here is the request's fault.
    public var meansDatabaseUnavailable: Bool {
        if isConnectionFailure || code == .poolTimeout || code == .closed { return true }
        guard let sqlState else { return false }
        return sqlState == "53300" || sqlState == "25006"
    }

    /// Whether `error` (a `PQError`, or a pipeline's) means the database is unavailable.
    public static func meansDatabaseUnavailable(_ error: any Error) -> Bool {
        if let error = error as? PQError { return error.meansDatabaseUnavailable }
        if let error = error as? PQPipelineError { return error.error.meansDatabaseUnavailable }
        return false
    }

    /// The statement lost a lock race and its transaction was rolled back: a deadlock
    /// (40P01, e.g. a read joining two tables while a projection rebuild swaps them) or a
    /// serialization failure (40001). Running the same transaction again is safe and usually
    /// succeeds at once.
    public var meansTransientConflict: Bool {
        sqlState == "40P01" || sqlState == "40001"
    }
}

/// Runs `body` again (up to `attempts` times in all) while it fails with a transient
/// conflict: for a read, or a pipeline in one implicit transaction, that the conflict rolled
/// back whole. Never for work that may have committed part of itself.
public func retryingTransientConflicts<T>(attempts: Int = 4, _ body: () async throws -> T) async throws -> T {
    var attempt = 1
    while true {
        do {
            return try await body()
        } catch let error as PQError where error.meansTransientConflict && attempt < attempts {
            attempt += 1
        }
    }
}
