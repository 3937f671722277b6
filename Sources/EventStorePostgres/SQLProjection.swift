import EventSourcing
import PQ

/// A projection whose read model lives in PostgreSQL tables and is written by SQL statements.
///
/// `statements(for:tables:)` is pure: it turns one event into the statements that apply it.
/// The store runs them inside the append transaction (inline) or inside the daemon's batch
/// transaction with the checkpoint (async), and into fresh tables during a rebuild, so one
/// function serves all three. Write every table name through `tables` and make statements
/// idempotent per stream order (upserts keyed by the aggregate), since a rebuild applies the
/// log in (transaction id, position) order, which need not equal the original commit order
/// of unrelated streams.
public protocol SQLProjection: Projection {
    /// The tables this projection owns. They are created by a migration in `schema/`.
    var tables: [String] { get }
    /// The statements that apply one event.
    func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery]
    /// The statements that apply several events in log order. The default applies them one by
    /// one; override it to fold a batch into fewer statements (counters, last-writer-wins rows).
    func statements(forBatch events: [EventEnvelope], tables: ProjectionTables) throws -> [PQQuery]
    /// Tables that the projection's statements only ever `INSERT` into (no upsert, update,
    /// delete or read-back of the same table). A rebuild fills their copies without indexes
    /// and builds each index once, after the fold and before the swap, instead of descending a
    /// random-keyed b-tree per row. A duplicate key then fails the index build, as it would
    /// have failed the insert. The default is none.
    var insertOnlyTables: Set<String> { get }
}

extension SQLProjection {
    public var insertOnlyTables: Set<String> { [] }

    public func statements(forBatch events: [EventEnvelope], tables: ProjectionTables) throws -> [PQQuery] {
        try events.flatMap { try statements(for: $0, tables: tables) }
    }
}

/// Resolves a projection's table names: the live tables, or their `__rebuild` copies.
public struct ProjectionTables: Sendable {
    private let suffix: String
    private let known: Set<String>

    /// The live tables.
    public static func live(_ projection: some SQLProjection) -> ProjectionTables {
        ProjectionTables(suffix: "", known: Set(projection.tables))
    }

    /// The fresh copies a rebuild fills before swapping them in.
    public static func rebuild(_ projection: some SQLProjection) -> ProjectionTables {
        ProjectionTables(suffix: rebuildSuffix, known: Set(projection.tables))
    }

    static let rebuildSuffix = "__rebuild"

    /// The physical name of a logical table, quoted for use in SQL.
    public func callAsFunction(_ table: String) -> String {
        precondition(known.contains(table), "table \(table) is not declared by the projection")
        return PQQuery.quoteIdentifier(table + suffix)
    }
}
