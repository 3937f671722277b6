/// A read model built from the log.
///
/// How a projection writes is the store's business (SQL statements for PostgreSQL); this
/// protocol holds what every store needs to know: its name and which events it reads.
public protocol Projection: Sendable {
    /// Unique, stable name (used for checkpoints, locks and `modgud projections rebuild NAME`).
    var name: String { get }
    /// The event types it reads; nil means every type.
    var eventTypes: Set<String>? { get }
    /// When it is updated.
    var mode: ProjectionMode { get }
}

extension Projection {
    /// Whether the projection reads events of this type.
    public func handles(_ type: String) -> Bool {
        eventTypes?.contains(type) ?? true
    }
}

/// When a projection sees an event.
public enum ProjectionMode: String, Sendable, Hashable, Codable {
    /// In the append's own transaction: visible the moment the append returns.
    case inline
    /// Later, by the projection daemon, from a checkpoint.
    case async
}

/// A projection updated in the append transaction (token lookups, passkey lists).
public protocol InlineProjection: Projection {}

extension InlineProjection {
    public var mode: ProjectionMode { .inline }
}

/// A projection updated by the daemon after the append (audit views, admin lists).
public protocol AsyncProjection: Projection {}

extension AsyncProjection {
    public var mode: ProjectionMode { .async }
}
