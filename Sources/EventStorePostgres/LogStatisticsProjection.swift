import EventSourcing
import PQ

/// Events per realm and type: an asynchronous read model for operators and metrics.
public struct LogStatisticsProjection: SQLProjection, AsyncProjection {
    public let name = "log_statistics"
    public let eventTypes: Set<String>? = nil
    public let tables = ["log_statistics"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        try statements(forBatch: [event], tables: tables)
    }

    /// One upsert per (realm, type) in the batch, adding its count: a counter folds.
    public func statements(forBatch events: [EventEnvelope], tables: ProjectionTables) throws -> [PQQuery] {
        var counts: [Key: Int64] = [:]
        for event in events { counts[Key(realm: event.stream.realm, type: event.type), default: 0] += 1 }
        return counts.sorted { ($0.key.realm, $0.key.type) < ($1.key.realm, $1.key.type) }.map { key, count in
            """
            INSERT INTO \(unescaped: tables("log_statistics")) (realm, type, events)
            VALUES (\(key.realm), \(key.type), \(count))
            ON CONFLICT (realm, type) DO UPDATE SET events = \(unescaped: tables("log_statistics")).events + EXCLUDED.events
            """
        }
    }

    private struct Key: Hashable {
        var realm: String
        var type: String
    }
}
