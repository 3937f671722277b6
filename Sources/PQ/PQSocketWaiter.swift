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
final class PQSocketWaiter: Sendable {
    /// What to wait for.
    enum Readiness {
        case readable
        case writable
    }

    /// The process's waiter; nil where epoll is unavailable (the connection then blocks on
    /// its own thread, as before).
    static let shared: PQSocketWaiter? = PQSocketWaiter()

    private let epoll: Int32
    private let waiting = Mutex<[Int32: CheckedContinuation<Void, Never>]>([:])

    private init?() {
        let descriptor = modgud_epoll_create()
        guard descriptor >= 0 else { return nil }
        epoll = descriptor
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self)
        let started = pthread_create(&thread, nil, { raw in
            let waiter = Unmanaged<PQSocketWaiter>.fromOpaque(raw!).takeRetainedValue()
            waiter.run()
            return nil
        }, box.toOpaque())
        guard started == 0 else {
            box.release()
            close(descriptor)
            return nil
        }
        pthread_detach(thread)
    }

    /// Suspends until `socket` is ready (or failed: an error or hang-up wakes the task too, and
    /// libpq then reports it).
    func wait(for readiness: Readiness, on socket: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Registered before the socket is armed, so a readiness that comes at once finds it.
            waiting.withLock { $0[socket] = continuation }
            // A socket armed before is re-armed; a new one (or one whose number was closed and
            // reused since) is added.
            let armed = modgud_epoll_arm(epoll, socket, readiness == .writable ? 1 : 0) == 0
            if !armed, let parked = waiting.withLock({ $0.removeValue(forKey: socket) }) {
                // Not watchable (never seen; epoll out of memory): wait on this thread instead,
                // as the connection's thread would. A socket closed under us returns at once, and
                // libpq then reports what happened.
                var descriptor = pollfd(fd: socket, events: Int16(readiness == .writable ? POLLOUT : POLLIN), revents: 0)
                _ = poll(&descriptor, 1, -1)
                parked.resume()
            }
        }
    }

    private func run() {
        var ready = [Int32](repeating: -1, count: 64)
        while true {
            let count = Int(modgud_epoll_wait(epoll, &ready, Int32(ready.count)))
            guard count > 0 else { continue }  // EINTR
            let resumed = waiting.withLock { waiting in ready[0..<count].compactMap { waiting.removeValue(forKey: $0) } }
            for continuation in resumed { continuation.resume() }
        }
    }
}
#endif
