import PQ
import Synchronization

/// Wakes projection daemons after appends commit, at most one NOTIFY in flight per instance.
///
/// Why not NOTIFY inside the append transaction: PostgreSQL serializes the commits of every
/// transaction that notified (a cluster-wide lock held through the commit record's flush),
/// which measured here halves durable append throughput and stops it scaling with writers
/// (docs/performance.md, "Event store performance"). A notification is only a hint, since daemons
/// also poll, so it is sent after the commit instead, and appends that arrive while one is
/// in flight are folded into one more.
final class AppendNotifier: Sendable {
    private struct State {
        var running = false
        var pending = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let pool: PQPool
    private let state = Mutex(State())

    init(pool: PQPool) {
        self.pool = pool
    }

    /// Asks for a notification; returns at once.
    func poke() {
        let start = state.withLock { state -> Bool in
            if state.running {
                state.pending = true
                return false
            }
            state.running = true
            return true
        }
        if start {
            Task { await self.drain() }
        }
    }

    private func drain() async {
        while true {
            _ = try? await pool.query(EventStoreSQL.notify)
            // Whether to go again, and if not, who waited for the end: decided in one lock, so a
            // waiter that arrives for a later poke is never released by this one.
            let (again, released) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                if state.pending {
                    state.pending = false
                    return (true, [])
                }
                state.running = false
                defer { state.idleWaiters = [] }
                return (false, state.idleWaiters)
            }
            for waiter in released { waiter.resume() }
            if !again { return }
        }
    }

    /// Returns once every notification asked for so far has been sent (or failed).
    func idle() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if !state.running { return true }
                state.idleWaiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }
}
