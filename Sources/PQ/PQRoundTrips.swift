import Synchronization

/// Round trips this process made to PostgreSQL: each statement sent alone, each statement
/// prepared, and each pipeline (however many statements it carries) counts one. `/metrics`
/// reports it as `modgud_db_round_trips`, and `modgud bench load` divides it by grants.
public enum PQRoundTrips {
    private static let counter = Atomic<Int>(0)

    /// Round trips since the process started.
    public static var total: Int { counter.load(ordering: .relaxed) }

    static func record() {
        counter.add(1, ordering: .relaxed)
    }
}
