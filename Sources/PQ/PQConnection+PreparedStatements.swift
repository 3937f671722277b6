import CLibPQ

/// The connection's prepared statements: every query runs as a named prepared statement,
/// prepared on first use and remembered per connection (by SQL text and parameter types), up
/// to a limit after which they are all deallocated.
extension PQConnection {
    struct StatementKey: Hashable {
        var sql: String
        var oids: [UInt32]
    }

    /// The name of a prepared statement for this query, preparing it on first use.
    func preparedName(for query: PQQuery, handle: OpaquePointer) throws(PQError) -> String {
        let key = StatementKey(sql: query.sql, oids: query.binds.map(\.oid))
        if let name = prepared[key] { return name }
        try resetPreparedIfFull(handle: handle)
        let name = nextStatementName()
        let oids = key.oids
        PQRoundTrips.record()
        let result = oids.withUnsafeBufferPointer { types in
            PQprepare(handle, name, query.sql, Int32(oids.count), types.baseAddress)
        }
        _ = try check(result, handle: handle)
        prepared[key] = name
        return name
    }

    nonisolated func nextStatementName() -> String {
        nextStatement += 1
        return "mg\(nextStatement)"
    }

    nonisolated func rememberPrepared(_ key: StatementKey, name: String) {
        prepared[key] = name
    }

    nonisolated func lookupPrepared(_ key: StatementKey) -> String? {
        prepared[key]
    }

    func resetPreparedIfFull(handle: OpaquePointer) throws(PQError) {
        guard prepared.count >= preparedLimit else { return }
        let result = PQexec(handle, "DEALLOCATE ALL")
        _ = try check(result, handle: handle)
        prepared.removeAll()
    }

    /// Turns a libpq result into rows or a typed error (freeing the result on error).
}
