#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A serial executor that runs every job on one dedicated OS thread.
///
/// Why: libpq's calls block (network round trips, lock waits on the server). Running them
/// on Swift's cooperative pool would starve every other task on a 2-core machine. An actor
/// whose `unownedExecutor` is a `ThreadExecutor` runs all of its methods on its own thread,
/// so a blocked libpq call occupies that thread only.
///
/// The thread lives until the executor is released and its queue is empty.
public final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    private let queue: JobQueue

    /// Starts the thread.
    /// - Parameter name: the thread's name as shown by debuggers and `top -H` (15 bytes max on Linux).
    public init(name: String) {
        queue = JobQueue()
        queue.executor = UnownedSerialExecutor(ordinary: self)
        let box = Unmanaged.passRetained(queue)
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let queue = Unmanaged<JobQueue>.fromOpaque(raw!).takeRetainedValue()
            queue.runLoop()
            return nil
        }, box.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(thread)
        _ = name  // Thread naming needs a shim on Linux; the name is kept for diagnostics only.
    }

    deinit {
        queue.stop()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.push(UnownedJob(job))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// The executor's queue, shared with its thread (which must not retain the executor itself).
private final class JobQueue: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [UnownedJob] = []
    private var stopped = false
    /// Set once by the owning executor before the thread starts; valid while jobs exist,
    /// because a pending job keeps its actor, and so the executor, alive.
    var executor: UnownedSerialExecutor?

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func push(_ job: UnownedJob) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func stop() {
        pthread_mutex_lock(mutex)
        stopped = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func runLoop() {
        var batch: [UnownedJob] = []
        while true {
            pthread_mutex_lock(mutex)
            while jobs.isEmpty && !stopped {
                pthread_cond_wait(condition, mutex)
            }
            if jobs.isEmpty && stopped {
                pthread_mutex_unlock(mutex)
                return
            }
            swap(&batch, &jobs)
            pthread_mutex_unlock(mutex)
            for job in batch {
                job.runSynchronously(on: executor!)
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
