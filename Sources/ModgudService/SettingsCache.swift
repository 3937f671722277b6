import Synchronization

/// Per-instance copies of rarely changing read-model rows (realm and client settings), so
/// the hot path reads them from memory (issue 12).
///
/// An entry is dropped at once when this instance changes it (`AdminService`), within
/// milliseconds when another instance does (`SettingsChangeListener`, by NOTIFY), and in any
/// case after `maxAge` (a notification lost while the listener reconnected).
public final class SettingsCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var loadedAt: ContinuousClock.Instant
        var generation: Int
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Bumped by every invalidation, so a load that began before one is not stored.
        var generation = 0
    }

    private let state = Mutex(State())
    private let maxAge: Duration
    private let capacity: Int

    public init(maxAge: Duration, capacity: Int = 10_000) {
        self.maxAge = maxAge
        self.capacity = capacity
    }

    /// The cached value, or `load()`'s (stored unless an invalidation happened meanwhile).
    public func value(for key: Key, load: () async throws -> Value) async rethrows -> Value {
        let now = ContinuousClock.now
        let (hit, generation) = state.withLock { state -> (Value?, Int) in
            if let entry = state.entries[key], now - entry.loadedAt < maxAge { return (entry.value, state.generation) }
            return (nil, state.generation)
        }
        if let hit { return hit }
        let loaded = try await load()
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= capacity { state.entries.removeAll() }
            state.entries[key] = Entry(value: loaded, loadedAt: now, generation: generation)
        }
        return loaded
    }

    /// Stores a value known without loading it (a key just made).
    public func store(_ value: Value, for key: Key) {
        state.withLock { state in
            if state.entries.count >= capacity { state.entries.removeAll() }
            state.entries[key] = Entry(value: value, loadedAt: ContinuousClock.now, generation: state.generation)
        }
    }

    public func invalidate(_ key: Key) {
        state.withLock { state in
            state.generation += 1
            state.entries[key] = nil
        }
    }

    public func invalidateAll() {
        state.withLock { state in
            state.generation += 1
            state.entries.removeAll()
        }
    }
}
