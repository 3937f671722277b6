import Dispatch

/// Where slow hashes run (issue 46: recovery codes' PBKDF2): one serial queue of its own, off
/// Swift's cooperative pool. A hash holds a core for tens of milliseconds; on the pool it would
/// hold one of the few threads every request's continuations need, so a burst of tries would
/// stall every endpoint, and a path with more awaits (a known account's) would wait longer at
/// each than one with fewer (an unknown address's), which ops/enumeration-bench measured as a
/// timing oracle. Here at most one core hashes, every try waits in the same line, and the
/// rest of the service keeps its threads.
enum SlowHashQueue {
    private static let queue = DispatchQueue(label: "modgud.slow-hash", qos: .utility)

    /// Runs `work` on the queue and returns its result.
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
