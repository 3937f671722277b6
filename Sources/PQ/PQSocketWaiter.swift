#if os(Linux)
import CLibPQ
import Glibc
import Synchronization

/// Suspends a task until a connection's socket is readable or writable, without a thread of
/// the connection's own (issue 49, item 2).
///
/// One thread waits in `epoll_wait(2)` for every registered socket and resumes the waiting
/// task when its socket is ready: a round trip then costs the kernel's wake-up of this thread
/// and the task's resumption, where handing the call to the connection's `ThreadExecutor`
/// also cost that thread's wake-up to send, its sleep in `poll(2)`, and its wake-up to
/// receive. NIO's event loops would spare the thread too, but NIO has no public way to watch
/// a descriptor it does not read itself, and libpq must read its socket itself.
///
/// Registrations are one-shot (`EPOLLONESHOT`): a socket is watched only while a task waits
/// on it, and a connection is waited on by one task at a time (the pool's lease).
///
/// Errors are errors (issue 67): every system call's failure reaches a waiting task as a
/// thrown `PQError.Code.socketWaitFailed`, never as readiness, a hang or a busy loop.
/// - A socket that cannot be watched (closed, `-1`, not pollable) fails its own wait at once.
/// - A socket closed (or replaced, as by `dup2`) while a task waits on it leaves epoll without
///   a word; the thread wakes at least once every `auditInterval` and fails such a wait.
/// - `epoll_wait` failing for any reason but `EINTR` (the epoll descriptor closed or replaced
///   under the thread) ends the waiter: every waiting task is failed, later waits throw, and
///   `PQConnection`'s in-place paths fall back to the connections' threads (`isAccepting`).
final class PQSocketWaiter: Sendable {
    /// What to wait for.
    enum Readiness {
        case readable
        case writable
    }

    /// The process's waiter; nil where epoll is unavailable (the connection then blocks on
    /// its own thread, as before).
    static let shared: PQSocketWaiter? = PQSocketWaiter()

    /// The longest the thread sleeps before it checks that every waited-on socket is still
    /// open and still the one registered (milliseconds): one wake-up a second when idle.
    static let auditInterval: Int32 = 1000

    /// Which file a descriptor referred to when its wait was registered.
    private struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    private struct Parked {
        var continuation: CheckedContinuation<Result<Void, PQError>, Never>
        var identity: Identity
    }

    private struct State {
        var waiting: [Int32: Parked] = [:]
        /// Set when the thread stopped: every later wait throws it.
        var failure: PQError?
    }

    /// The epoll instance (internal for tests, which break it on a waiter of their own).
    let epollDescriptor: Int32
    private let state = Mutex<State>(State())
    private let wakeupCounter = Atomic<Int>(0)
    private let idleWakeupCounter = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// A waiter with its own epoll instance and thread (the process uses `shared`; tests make
    /// their own). Nil when either cannot be created.
    init?() {
        let descriptor = modgud_epoll_create()
        guard descriptor >= 0 else { return nil }
        epollDescriptor = descriptor
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self)
        let started = pthread_create(&thread, nil, { raw in
            let waiter = Unmanaged<PQSocketWaiter>.fromOpaque(raw!).takeRetainedValue()
            waiter.run()
            return nil
        }, box.toOpaque())
        guard started == 0 else {
            box.release()
            close(descriptor)  // Ours and unused: nothing to do if even this fails.
            return nil
        }
        pthread_detach(thread)
    }

    /// Whether waits are accepted: false once the thread stopped on an epoll failure.
    var isAccepting: Bool { !stopped.load(ordering: .acquiring) }

    /// How many times `epoll_wait` returned (tests: a busy loop would make this soar).
    var wakeups: Int { wakeupCounter.load(ordering: .relaxed) }

    /// How many times `epoll_wait` returned with nothing ready (tests: time passes).
    var idleWakeups: Int { idleWakeupCounter.load(ordering: .relaxed) }

    /// How many tasks wait now.
    var pending: Int { state.withLock { $0.waiting.count } }

    /// Suspends until `socket` is ready (an error or hang-up on the socket counts as ready:
    /// libpq then reports it).
    /// - Throws: `.socketWaitFailed` when the socket cannot be watched, is closed or replaced
    ///   while the task waits, or the waiter has stopped.
    func wait(for readiness: Readiness, on socket: Int32) async throws(PQError) {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, PQError>, Never>) in
            var device: UInt64 = 0
            var inode: UInt64 = 0
            let identified = modgud_descriptor_identity(socket, &device, &inode)
            guard identified == 0 else {
                continuation.resume(returning: .failure(Self.failure(-identified, socket: socket, "it is not an open descriptor")))
                return
            }
            // Registered before the socket is armed, so a readiness that comes at once finds it.
            let refusal: PQError? = state.withLock { state in
                if let failure = state.failure { return failure }
                state.waiting[socket] = Parked(continuation: continuation, identity: Identity(device: device, inode: inode))
                return nil
            }
            if let refusal {
                continuation.resume(returning: .failure(refusal))
                return
            }
            // A socket armed before is re-armed; a new one (or one whose number was closed and
            // reused since) is added.
            let armed = modgud_epoll_arm(epollDescriptor, socket, readiness == .writable ? 1 : 0)
            // Unless the thread failed it meanwhile (a stopping waiter fails every wait).
            if armed < 0, let parked = state.withLock({ $0.waiting.removeValue(forKey: socket) }) {
                parked.continuation.resume(returning: .failure(Self.failure(-armed, socket: socket, "epoll cannot watch it")))
            }
        }
        try outcome.get()
    }

    private func run() {
        var ready = [Int32](repeating: -1, count: 64)
        let clock = ContinuousClock()
        let interval = Duration.milliseconds(Self.auditInterval)
        var nextAudit = clock.now + interval
        while true {
            let count = modgud_epoll_wait(epollDescriptor, &ready, Int32(ready.count), Self.auditInterval)
            wakeupCounter.add(1, ordering: .relaxed)
            if count == -EINTR { continue }
            guard count >= 0 else {
                stop(errorNumber: -count)
                return
            }
            if count == 0 {
                idleWakeupCounter.add(1, ordering: .relaxed)
            } else {
                let resumed = state.withLock { state in
                    ready[0..<Int(count)].compactMap { state.waiting.removeValue(forKey: $0)?.continuation }
                }
                for continuation in resumed { continuation.resume(returning: .success(())) }
            }
            let now = clock.now
            if now >= nextAudit {
                audit()
                nextAudit = now + interval
            }
        }
    }

    /// Fails every wait whose socket was closed, or closed and its number reused, since it was
    /// registered: epoll dropped it silently and would never report it.
    private func audit() {
        let failed = state.withLock { state -> [(CheckedContinuation<Result<Void, PQError>, Never>, PQError)] in
            var failed: [(CheckedContinuation<Result<Void, PQError>, Never>, PQError)] = []
            for (socket, parked) in state.waiting {
                var device: UInt64 = 0
                var inode: UInt64 = 0
                let identified = modgud_descriptor_identity(socket, &device, &inode)
                if identified < 0 {
                    failed.append((parked.continuation, Self.failure(-identified, socket: socket, "it was closed while a task waited on it")))
                } else if Identity(device: device, inode: inode) != parked.identity {
                    failed.append((parked.continuation, Self.failure(EBADF, socket: socket, "it was closed and its number reused while a task waited on it")))
                } else {
                    continue
                }
                state.waiting[socket] = nil
            }
            return failed
        }
        for (continuation, error) in failed { continuation.resume(returning: .failure(error)) }
    }

    /// `epoll_wait` failed: the epoll descriptor is no longer (or never was) a usable epoll
    /// instance. Its number is not closed (it may be someone else's by now); every waiting
    /// task is failed, and so is every later wait.
    private func stop(errorNumber: Int32) {
        let failure = PQError(
            .socketWaitFailed,
            message: "the socket waiter stopped: epoll_wait failed: \(Self.describe(errorNumber))",
            errorNumber: errorNumber)
        let parked = state.withLock { state in
            state.failure = failure
            let parked = state.waiting.values.map(\.continuation)
            state.waiting.removeAll()
            return parked
        }
        stopped.store(true, ordering: .releasing)
        for continuation in parked { continuation.resume(returning: .failure(failure)) }
    }

    private static func failure(_ errorNumber: Int32, socket: Int32, _ reason: String) -> PQError {
        PQError(
            .socketWaitFailed, message: "waiting on socket \(socket) failed: \(reason): \(describe(errorNumber))",
            errorNumber: errorNumber)
    }

    private static func describe(_ errorNumber: Int32) -> String {
        "\(String(cString: strerror(errorNumber))) (errno \(errorNumber))"
    }
}
#endif
