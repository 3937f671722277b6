import EventSourcing
import PQ

/// Reads of the log for followers outside the projection runner (the Shared Signals
/// transmitter): the event store's one home of the gap-safe horizon (docs/architecture.md,
/// "The gap problem"), so no reader keeps its own copy of it.
public enum EventLogReads {
    /// A batch of a follower's events and the log's horizon at the same snapshot.
    public struct AdmittedBatch: Sendable {
        /// The events of the asked types after the cursor, oldest first, at most the limit.
        public var events: [RecordedEvent]
        /// The newest admitted event of any type (nil: the log is empty).
        public var horizon: LogCursor?
    }

    /// The next events of `types` after `cursor`, gap-safe, with the horizon
    /// (`EventStoreSQL.readAdmitted`). Runs on the caller's connection, in its transaction.
    public static func admitted(after cursor: LogCursor, types: [String], limit: Int, on connection: isolated PQConnection) throws
        -> AdmittedBatch
    {
        var batch = AdmittedBatch(events: [], horizon: nil)
        for row in try connection.query(EventStoreSQL.readAdmitted(after: cursor, types: types, limit: limit)).rows {
            guard try row.decode(String?.self, at: 2) != nil else {
                batch.horizon = LogCursor(transactionID: try row.decode(PQTransactionID.self, at: 1).rawValue, position: try row.decode(Int64.self, at: 0))
                continue
            }
            batch.events.append(try RecordedEvent(row: row))
        }
        return batch
    }
}
