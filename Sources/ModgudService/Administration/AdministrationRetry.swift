import EventSourcing

/// How administration commands meet concurrent writers.
enum AdministrationRetry {
    /// Runs a read-modify-write until it applies to the state it read (a few tries: each loss
    /// means another writer committed in between).
    static func readModifyWrite<T>(_ attempt: () async throws -> T) async throws -> T {
        for _ in 0..<7 {
            do { return try await attempt() } catch is AggregateChangedMeanwhile { continue }
        }
        return try await attempt()
    }
}
