// Shared by the harnesses whose code under test is async (Fuzz/X509ChainFuzz.swift and the
// JWT harnesses): libFuzzer calls LLVMFuzzerTestOneInput on its own thread, not a cooperative
// one, so that thread may wait for a task without starving the pool the task runs on.

import Dispatch

/// The value of `body`, run to completion on the cooperative pool while this thread waits.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = BlockingResult<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Written by the task before it signals, read by the waiting thread after: no overlap.
final class BlockingResult<T>: @unchecked Sendable {
    var value: T?
}
