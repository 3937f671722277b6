import EventSourcing
import PQ

extension RecordedEvent {
    /// Decodes a row selected with `EventStoreSQL.eventColumns`.
    public init(row: PQRow) throws {
        let envelope = EventEnvelope(
            stream: StreamRef(
                id: try row.decode(String.self, at: 2),
                type: try row.decode(String.self, at: 3),
                realm: try row.decode(String.self, at: 5)),
            streamVersion: try row.decode(Int64.self, at: 4),
            type: try row.decode(String.self, at: 6),
            revision: try row.decode(Int.self, at: 7),
            payload: Array(try row.decode(PQJSON.self, at: 8).text.utf8),
            metadata: EventMetadata(
                correlationID: try row.decode(String?.self, at: 9),
                causationID: try row.decode(String?.self, at: 10),
                actor: try row.decode(String?.self, at: 11),
                clientIP: try row.decode(String?.self, at: 12)))
        self.init(
            envelope: envelope,
            position: try row.decode(Int64.self, at: 0),
            transactionID: try row.decode(PQTransactionID.self, at: 1).rawValue,
            recordedAt: try row.decode(at: 13))
    }
}

extension EventMetadata {
    /// The metadata as a `jsonb` parameter.
    var json: PQJSON { PQJSON(jsonText) }
}

extension LogCursor {
    /// Decodes a `checkpoints` row's (tx_id, position), as `EventStoreSQL.checkpoint` selects them.
    public init(checkpointRow row: PQRow) throws {
        self.init(transactionID: try row.decode(PQTransactionID.self, at: 0).rawValue, position: try row.decode(Int64.self, at: 1))
    }
}
