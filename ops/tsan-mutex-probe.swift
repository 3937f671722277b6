// Does ThreadSanitizer see Synchronization.Mutex on this toolchain? Four threads add to one
// Mutex-guarded counter: a correct program. `ops/sanitize thread` builds and runs this first;
// a report here means every report inside a `withLock` closure is TSan not seeing the lock
// (the standard library is not instrumented), not a race in our code (issue 44).
import Foundation
import Synchronization

final class Box: Sendable { let state = Mutex(0) }
let box = Box()
let threads = (0..<4).map { _ in Thread { for _ in 0..<100_000 { box.state.withLock { $0 += 1 } } } }
threads.forEach { $0.start() }
while box.state.withLock({ $0 }) < 400_000 { usleep(1000) }
print("count", box.state.withLock { $0 })
