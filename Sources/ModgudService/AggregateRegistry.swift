import EventSourcing
import EventStorePostgres
import ModgudDomain

/// Hands out the actor of each live aggregate and forgets idle ones.
///
/// Forgetting is always safe: the actor's state is a cache, and a new actor for the same
/// stream reloads it; a second actor for one stream (here or in another instance) is kept
/// honest by the expected-version append.
public actor AggregateRegistry<A: Aggregate> where A.State: Sendable {
    private let store: PostgresEventStore
    private let registry: EventTypeRegistry
    private let capacity: Int
    private var actors: [String: (actor: AggregateActor<A>, lastUsed: UInt64)] = [:]
    /// Advances on every lookup: the least recently used actor has the smallest stamp.
    private var clock: UInt64 = 0

    public init(store: PostgresEventStore, registry: EventTypeRegistry = ModgudEvents.registry, capacity: Int = 10_000) {
        self.store = store
        self.registry = registry
        self.capacity = max(1, capacity)
    }

    /// The actor of a stream, created on first use. O(1) per lookup; going over capacity
    /// evicts the least recently used tenth at once (one sort per `capacity / 10`
    /// creations), so one-shot streams (ceremonies, codes) do not make every lookup pay.
    public func actor(for stream: StreamRef) -> AggregateActor<A> {
        actor(for: stream, new: false)
    }

    /// The actor of a stream the caller just named with a fresh random id (a new token
    /// family, a new ceremony): its first command skips reading the (empty) stream. Were the
    /// stream not new after all, the append's expected version would catch it.
    public func actor(forNew stream: StreamRef) -> AggregateActor<A> {
        actor(for: stream, new: true)
    }

    private func actor(for stream: StreamRef, new: Bool) -> AggregateActor<A> {
        clock += 1
        if let existing = actors[stream.id] {
            actors[stream.id] = (existing.actor, clock)
            return existing.actor
        }
        let created = AggregateActor<A>(stream: stream, store: store, registry: registry, knownEmpty: new)
        actors[stream.id] = (created, clock)
        if actors.count > capacity {
            let keep = capacity - capacity / 10
            let oldest = actors.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(actors.count - keep)
            for (id, _) in oldest where id != stream.id { actors[id] = nil }
        }
        return created
    }

    /// Forgets a stream's actor: the next use reloads it (its events were rewritten in place).
    public func forget(_ streamID: String) {
        actors[streamID] = nil
    }

    /// Forgets every actor (after `modgud privacy seal-legacy` rewrote events in place).
    public func forgetAll() {
        actors.removeAll()
    }

    /// How many actors are cached (for metrics and tests).
    public var count: Int { actors.count }
}
