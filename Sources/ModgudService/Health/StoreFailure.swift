import PQ

/// What the HTTP edge may know of the store's failures and counters without importing it
/// (issue 42): whether an error means the database is away (answered 503, not 500), and the
/// round trips made so far (a `/metrics` gauge).
public enum StoreFailure {
    /// Whether `error` means the database cannot be reached now (a retry may succeed).
    public static func meansDatabaseUnavailable(_ error: any Error) -> Bool {
        PQError.meansDatabaseUnavailable(error)
    }

    /// Round trips to the database since start-up, every pool of this process.
    public static var roundTrips: Int {
        PQRoundTrips.total
    }
}
