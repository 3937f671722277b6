/// Lets one command at a time through an actor, first come first served.
///
/// Why: an actor method that awaits (here: on the database) lets the next call in before it
/// finishes (actor reentrancy). Two commands to one aggregate must not interleave between
/// "decide" and "append", so each takes the gate for its whole run.
struct SerialGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Whether the caller may go straight in; if not, call `enqueue` and wait.
    mutating func tryEnter() -> Bool {
        if busy { return false }
        busy = true
        return true
    }

    mutating func enqueue(_ continuation: CheckedContinuation<Void, Never>) {
        waiters.append(continuation)
    }

    /// Hands the gate to the next waiter, or opens it.
    mutating func leave() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    var isIdle: Bool { !busy && waiters.isEmpty }
}
