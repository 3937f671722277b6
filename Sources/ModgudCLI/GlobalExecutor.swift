import NIOCore
import NIOPosix
import Synchronization

/// Where this process runs Swift concurrency's tasks (issue 49, item 2).
///
/// By default the handlers' tasks run on Swift's cooperative pool, and a request hops
/// between threads: NIO's event loop reads it, a pool thread runs the handler, the event loop
/// writes the answer. With `MODGUD_GLOBAL_EXECUTOR=nio`, NIO's event loops
/// (`MultiThreadedEventLoopGroup.singleton`, one per core, Hummingbird's group too) are
/// installed as the global executor, so a request's task runs on the loop that read it and
/// only the hops to and from `PQ`'s connection threads remain. Nothing in the product
/// blocks a task's thread (libpq runs on `PQ`'s own threads), so either is safe.
///
/// Not the default: measured on two cores it changed neither the refresh rate nor the
/// server's CPU per grant beyond the run-to-run noise, and it made group commit gather fewer
/// appends per commit (BENCHMARKS.md, "Tasks on the event loops"). It is the ground a
/// non-blocking `PQ` on the same loops would stand on.
enum GlobalExecutor {
    /// The environment variable that chooses: `cooperative` (the default) or `nio`.
    static let environmentKey = "MODGUD_GLOBAL_EXECUTOR"

    private static let installed = Atomic<Bool>(false)

    /// Whether NIO's event loops run this process's tasks.
    static var isNIO: Bool { installed.load(ordering: .relaxed) }

    /// Installs NIO's event loops as the global executor when the environment asks for them.
    /// Call once, first thing on the main thread, before any task is started.
    static func install(environment: [String: String]) {
        guard environment[environmentKey] == "nio" else { return }
        let done = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        installed.store(done, ordering: .relaxed)
    }
}
