import EventSourcing
import EventStorePostgres
import Foundation
import PQ

/// A test event carrying a number.
struct Counted: DomainEvent, Equatable {
    static let eventType = "test.counted"
    var n: Int
}

/// Another event type, ignored by some projections.
struct Noted: DomainEvent, Equatable {
    static let eventType = "test.noted"
    var text: String
}

func counted(_ n: Int) throws -> NewEvent { try NewEvent(Counted(n: n)) }

func stream(_ key: String, realm: String = "default") -> StreamRef {
    StreamRef(type: "counter", key: key, realm: realm)
}

/// Inline: one row per stream with its event count and the sum of `n` (visible at append).
struct StreamTotals: SQLProjection, InlineProjection {
    let name = "stream_totals"
    let eventTypes: Set<String>? = [Counted.eventType]
    let tables = ["stream_totals"]

    static let createTable: PQQuery = """
        CREATE TABLE stream_totals (stream_id text PRIMARY KEY, realm text NOT NULL, events bigint NOT NULL,
                                    total bigint NOT NULL CHECK (total < 1000000), version bigint NOT NULL)
        """

    func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let payload = try event.decode(Counted.self)
        return [
            """
            INSERT INTO \(unescaped: tables("stream_totals")) (stream_id, realm, events, total, version)
            VALUES (\(event.stream.id), \(event.stream.realm), 1, \(payload.n), \(event.streamVersion))
            ON CONFLICT (stream_id) DO UPDATE
            SET events = \(unescaped: tables("stream_totals")).events + 1,
                total = \(unescaped: tables("stream_totals")).total + EXCLUDED.total,
                version = EXCLUDED.version
            """
        ]
    }
}

/// Async: how many times each (stream, version) was applied, and the value; rejects n < 0.
struct AppliedLog: SQLProjection, AsyncProjection {
    let name: String
    let eventTypes: Set<String>?
    var tables: [String] { [name] }

    init(name: String = "applied_log", eventTypes: Set<String>? = nil) {
        self.name = name
        self.eventTypes = eventTypes
    }

    var createTable: PQQuery {
        """
        CREATE TABLE \(identifier: name) (stream_id text NOT NULL, version bigint NOT NULL, type text NOT NULL,
            n integer CHECK (n >= 0), times integer NOT NULL DEFAULT 1, PRIMARY KEY (stream_id, version))
        """
    }

    func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let n: Int? = event.type == Counted.eventType ? try event.decode(Counted.self).n : nil
        return [
            """
            INSERT INTO \(unescaped: tables(name)) (stream_id, version, type, n) VALUES
            (\(event.stream.id), \(event.streamVersion), \(event.type), \(n.map { Int32($0) }))
            ON CONFLICT (stream_id, version) DO UPDATE SET times = \(unescaped: tables(name)).times + 1
            """
        ]
    }
}

extension PQPool {
    func count(_ sql: PQQuery) async throws -> Int {
        try await query(sql).first!.decode(Int.self, at: 0)
    }
}

/// Inline and insert-only: one row per counted event, with a primary key, a unique partial
/// index and a plain index, so a rebuild must build all three after its fold.
struct CountedRows: SQLProjection, InlineProjection {
    let name = "counted_rows"
    let eventTypes: Set<String>? = [Counted.eventType]
    let tables = ["counted_rows"]
    let insertOnlyTables: Set<String> = ["counted_rows"]

    static let createTable: [PQQuery] = [
        "CREATE TABLE counted_rows (stream_id text NOT NULL, version bigint NOT NULL, n bigint NOT NULL, PRIMARY KEY (stream_id, version))",
        "CREATE UNIQUE INDEX counted_rows_big ON counted_rows (n) WHERE n >= 1000",
        "CREATE INDEX counted_rows_by_n ON counted_rows USING btree (n DESC, stream_id)",
    ]

    func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let payload = try event.decode(Counted.self)
        return [
            """
            INSERT INTO \(unescaped: tables("counted_rows")) (stream_id, version, n)
            VALUES (\(event.stream.id), \(event.streamVersion), \(payload.n))
            """
        ]
    }
}
