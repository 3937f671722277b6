#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PQ

/// Retention for one-shot streams (EventStoreDB's `$maxAge` is the model): streams of the
/// named types whose last event is older than `maxAge` are deleted with their events.
///
/// Only streams whose whole purpose ends within minutes belong here (a passkey ceremony, an
/// email challenge): after `maxAge` they are certainly spent or expired, and nothing refers
/// to them. Identity streams (users, clients, realms, credentials, token families) are
/// never named, so never pruned. Deletes run in batches of `batchSize` streams, one
/// statement each, so a large backlog never holds long locks. Each batch records what it
/// removed for the audit log, in its own transaction (`AuditRedactionRecorder`).
public struct LogRetention: Sendable {
    public struct Report: Sendable, Equatable {
        public var streams: Int
        public var events: Int

        public init(streams: Int, events: Int) {
            self.streams = streams
            self.events = events
        }
    }

    let pool: PQPool
    public let streamTypes: [String]
    public let maxAge: Duration
    public let batchSize: Int

    public init(pool: PQPool, streamTypes: [String], maxAge: Duration, batchSize: Int = 1000) {
        self.pool = pool
        self.streamTypes = streamTypes
        self.maxAge = maxAge
        self.batchSize = max(1, batchSize)
    }

    /// Deletes every stream past retention at `now`.
    @discardableResult
    public func prune(now: Date = Date()) async throws -> Report {
        let cutoff = now.addingTimeInterval(-Double(maxAge.components.seconds))
        var total = Report(streams: 0, events: 0)
        while true {
            let (streams, events) = try await pool.transaction { connection in
                let rows = try connection.query(EventStoreSQL.pruneStreams(types: streamTypes, cutoff: cutoff, limit: batchSize)).rows
                guard let first = rows.first else { return (0, 0) }
                // The audit log keeps the removed events' leaves; the removal is recorded beside them.
                let removed = try rows.map { row in
                    AuditRedaction(position: try row.decode(Int64.self, at: 2), realm: try row.decode(String.self, at: 1), kind: .removed)
                }
                try AuditRedactionRecorder.record(removed, operation: "retention", actor: "system:retention", on: connection)
                return (try first.decode(Int.self, at: 0), rows.count)
            }
            total.streams += streams
            total.events += events
            if streams < batchSize { break }
        }
        return total
    }
}
