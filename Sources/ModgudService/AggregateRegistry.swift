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
    private var actors: [String: AggregateActor<A>] = [:]
    /// Stream ids, least recently used first.
    private var recency: [String] = []

    public init(store: PostgresEventStore, registry: EventTypeRegistry = ModgudEvents.registry, capacity: Int = 10_000) {
        self.store = store
        self.registry = registry
        self.capacity = max(1, capacity)
    }

    /// The actor of a stream, created on first use.
    public func actor(for stream: StreamRef) -> AggregateActor<A> {
        if let existing = actors[stream.id] {
            if let index = recency.lastIndex(of: stream.id) { recency.remove(at: index) }
            recency.append(stream.id)
            return existing
        }
        let created = AggregateActor<A>(stream: stream, store: store, registry: registry)
        actors[stream.id] = created
        recency.append(stream.id)
        if actors.count > capacity, let oldest = recency.first {
            recency.removeFirst()
            actors[oldest] = nil
        }
        return created
    }

    /// How many actors are cached (for metrics and tests).
    public var count: Int { actors.count }
}
