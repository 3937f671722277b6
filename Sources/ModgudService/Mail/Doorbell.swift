import Synchronization

/// Wakes one waiting loop early: `ring()` from anywhere, `wait(upTo:)` in the loop. A ring
/// while nobody waits is remembered (once), so a wake-up is never lost.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns after a ring or `seconds`, whichever comes first (or at once when cancelled).
    func wait(upTo seconds: Double) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForRing() }
            group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
    }
}
