import Synchronization

/// Round trips this process made to PostgreSQL: each statement sent alone, each statement
/// prepared, and each pipeline (however many statements it carries) counts one. `/metrics`
/// reports it as `modgud_db_round_trips`, and `modgud bench load` divides it by grants.
public enum PQRoundTrips {
    private static let counter = Atomic<Int>(0)
    private static let inPlaceCounter = Atomic<Int>(0)

    /// Round trips since the process started.
    public static var total: Int { counter.load(ordering: .relaxed) }

    /// Of those, the ones the calling task made itself, without the connection's thread
    /// (`PQConnection.pipelineInPlace`, `queryInPlace`).
    public static var inPlace: Int { inPlaceCounter.load(ordering: .relaxed) }

    static func record(inPlace: Bool = false) {
        counter.add(1, ordering: .relaxed)
        if inPlace { inPlaceCounter.add(1, ordering: .relaxed) }
    }
}
