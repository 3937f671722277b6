import PQ

/// A migrated throwaway database a test harness can run on: a fresh database on the shared
/// test cluster (`TestDatabase`), or one on a cluster of its own (`RestartableDatabase`).
public protocol DisposableDatabase: Sendable {
    var url: String { get }
    var pool: PQPool { get }
    /// Another pool on the same database (a second instance).
    func makePool(maxConnections: Int) -> PQPool
    /// Closes the pool and removes the database (and its cluster, if it has its own).
    func dispose() async
}

extension TestDatabase: DisposableDatabase {
    public func dispose() async { await drop() }
}

extension RestartableDatabase: DisposableDatabase {
    public func makePool(maxConnections: Int) -> PQPool {
        PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: maxConnections))
    }

    public func dispose() async { await destroy() }
}
