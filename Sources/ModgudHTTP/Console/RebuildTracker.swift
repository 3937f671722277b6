import EventStorePostgres
import Synchronization

/// Rebuilds started from this instance's console and how far each has come (issue 31). Another
/// instance's rebuild is not seen here; the projection's status shows it held meanwhile.
final class RebuildTracker: Sendable {
    struct Progress: Sendable {
        var done: Int
        var total: Int
        var finished: Bool
        var failure: String?
    }

    private let state = Mutex<[String: Progress]>([:])

    /// Starts a rebuild in the background unless one of `name` is running here; false when one is.
    func start(_ name: String, _ run: @escaping @Sendable (@escaping @Sendable (Int, Int) -> Void) async throws -> Void) -> Bool {
        let started = state.withLock { running in
            if let current = running[name], !current.finished { return false }
            running[name] = Progress(done: 0, total: 0, finished: false)
            return true
        }
        guard started else { return false }
        Task {
            do {
                try await run { done, total in self.state.withLock { $0[name] = Progress(done: done, total: total, finished: false) } }
                state.withLock { $0[name]?.finished = true }
            } catch {
                state.withLock { $0[name] = Progress(done: 0, total: 0, finished: true, failure: "\(error)") }
            }
        }
        return true
    }

    func progress(_ name: String) -> Progress? {
        state.withLock { $0[name] }
    }
}
