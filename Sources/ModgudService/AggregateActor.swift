import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// What a command did: the events it appended (none if it changed nothing) and the state after.
public struct CommandOutcome<A: Aggregate>: Sendable where A.State: Sendable, A.Event: Sendable {
    public var events: [A.Event]
    public var state: A.State
    public var version: Int64
}

/// The one owner of an aggregate in this instance (docs/architecture.md, "Event sourcing").
///
/// A command runs alone (`SerialGate`): decide on the cached state, append with exactly the
/// version that state came from, evolve. The cache is never the authority
/// (docs/decisions.md, "Decisions on the latest state"):
/// - a decision that writes events is checked by the append: if another instance appended
///   meanwhile, the store refuses it, the actor reads the newer events and decides again
///   (bounded retries);
/// - a decision that writes nothing, or refuses, is confirmed against the store before it
///   answers: the actor reads the stream after its cached version (one query) and, when
///   another instance wrote, decides again on the newer state. Only a decision that writes
///   pays no read (the refresh path's rotation, a passkey's use).
public actor AggregateActor<A: Aggregate> where A.State: Sendable {
    public nonisolated let stream: StreamRef
    private let store: PostgresEventStore
    private let registry: EventTypeRegistry
    private var state = A.initialState
    private var version: Int64 = 0
    private var gate = SerialGate()
    /// Whether the cache has read the store at least once (or the stream is known to be new).
    private var loaded: Bool
    /// Attempts before a persistent conflict is reported.
    private let maxAttempts = 8

    init(stream: StreamRef, store: PostgresEventStore, registry: EventTypeRegistry, knownEmpty: Bool = false) {
        self.loaded = knownEmpty
        self.stream = stream
        self.store = store
        self.registry = registry
    }

    /// The state with every committed event applied.
    public func current() async throws -> (state: A.State, version: Int64) {
        await enter()
        defer { gate.leave() }
        try await catchUp()
        return (state, version)
    }

    /// The state with every committed event applied, read in one round trip with `queries`
    /// (the stream's read goes in at `index`). `judging` sees every result first and may throw
    /// (a token request's checks, issue 49); only then are the newer events applied. A cached
    /// state is still confirmed by the read.
    public func current(
        pipelinedWith queries: [PQQuery], at index: Int, judging: @Sendable ([PQResult]) throws -> Void
    ) async throws -> (state: A.State, version: Int64) {
        await enter()
        defer { gate.leave() }
        let (newer, results) = try await store.readStream(stream.id, after: version, pipelinedWith: queries, at: index)
        try judging(results)
        try apply(newer)
        return (state, version)
    }

    /// The state as of at least `storeVersion` (read by the caller alongside other data in
    /// one statement): no read when the cache has it already. A cache ahead of it is fine,
    /// since a command's append checks the version anyway.
    public func current(atLeast storeVersion: Int64) async throws -> (state: A.State, version: Int64) {
        await enter()
        defer { gate.leave() }
        if version < storeVersion || !loaded { try await catchUp() }
        return (state, version)
    }

    /// Runs a command.
    /// - Parameters:
    ///   - extra: statements to commit with the events (an outbox row, say), given the events.
    ///   - alsoAppending: events for other streams to commit in the same transaction, given
    ///     the events (a redeemed registration code creates its user, say). A conflict on one
    ///     of those streams is not retried: it is thrown.
    ///   - onlyAtVersion: run the command only while the stream is at this version (the
    ///     version the caller's own read of the state returned): a read-modify-write, such as
    ///     an operator's partial update of settings, that must not write back a state another
    ///     writer changed meanwhile. Otherwise `AggregateChangedMeanwhile` is thrown and the
    ///     caller reads again.
    /// - Throws: `DomainError` when refused; `AggregateConflict` after repeated conflicts;
    ///   `AggregateChangedMeanwhile` for `onlyAtVersion`.
    public func execute(
        _ command: A.Command, now: Date, metadata: EventMetadata, onlyAtVersion: Int64? = nil,
        extra: @Sendable ([A.Event]) throws -> [PQQuery] = { _ in [] },
        alsoAppending: @Sendable ([A.Event]) throws -> [StreamWrite] = { _ in [] }
    ) async throws -> CommandOutcome<A> {
        await enter()
        defer { gate.leave() }
        // Whether the cached state was read from the store during this command: a decision
        // that writes nothing or refuses stands only on such a state.
        var confirmed = false
        if !loaded {
            try await catchUp()
            confirmed = true
        }
        for attempt in 0..<maxAttempts {
            if attempt > 1 {
                // Two writers that keep colliding would keep colliding in step: after the second
                // loss, a random pause of up to 2^attempt ms breaks the rhythm (at most about
                // 0.2 s over all attempts).
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...(1 << attempt))))
            }
            if let onlyAtVersion, version != onlyAtVersion { throw AggregateChangedMeanwhile(stream: stream.id) }
            var events: [A.Event] = []
            var refusal: (any Error)?
            do { events = try A.decide(command, state: state, now: now) } catch { refusal = error }
            if refusal != nil || events.isEmpty {
                // A refusal or a "nothing to do" on the cache may be stale: another instance may
                // have written since (issue 40: disable, enable elsewhere, disable again answered
                // "disabled" and wrote nothing). Decide again if the store has newer events.
                if !confirmed {
                    confirmed = true
                    if try await catchUp() > 0 { continue }
                }
                if let refusal { throw refusal }
                return CommandOutcome(events: [], state: state, version: version)
            }
            let own = StreamWrite(stream: stream, expected: ExpectedVersion(current: version), events: try events.map { try $0.newEvent() })
            do {
                _ = try await store.append([own] + alsoAppending(events), metadata: metadata, alsoExecuting: extra(events))
            } catch EventStoreError.wrongExpectedVersion(let conflicted, _, let actual) where conflicted == stream.id {
                if actual < version {
                    // The stream is behind the cache: retention deleted it (a one-shot stream
                    // past its retention). Start over from what the store holds.
                    state = A.initialState
                    version = 0
                }
                try await catchUp()  // another instance wrote: decide again on the newer state
                confirmed = true
                continue
            }
            state = events.reduce(state, A.evolve)
            version += Int64(events.count)
            return CommandOutcome(events: events, state: state, version: version)
        }
        throw AggregateConflict(stream: stream.id, attempts: maxAttempts)
    }

    private func enter() async {
        if gate.tryEnter() { return }
        await withCheckedContinuation { gate.enqueue($0) }
    }

    /// Reads and applies the events after the cached version; returns how many there were.
    @discardableResult
    private func catchUp() async throws -> Int {
        let newer = try await store.readStream(stream.id, after: version)
        try apply(newer)
        return newer.count
    }

    /// Applies events read after the cached version.
    private func apply(_ newer: [RecordedEvent]) throws {
        for recorded in newer {
            state = A.evolve(state, try A.Event(decoding: recorded.envelope, registry: registry))
            version = recorded.streamVersion
        }
        loaded = true
    }

    var isIdle: Bool { gate.isIdle }
}

/// A command kept losing the race for its stream.
public struct AggregateConflict: Error, CustomStringConvertible {
    public var stream: String
    public var attempts: Int
    public var description: String { "stream \(stream) changed under \(attempts) attempts in a row" }
}

/// The stream moved on from the version a read-modify-write started from: read again.
public struct AggregateChangedMeanwhile: Error, CustomStringConvertible {
    public var stream: String
    public var description: String { "stream \(stream) changed since it was read" }
}
