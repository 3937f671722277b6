import EventSourcing
import Foundation
import PQ

/// One event of a moving realm as staged from the source: every column as the source wrote it
/// (text, so that nothing is re-encoded), and the source transaction that wrote it.
struct RealmMoveEvent: Sendable, Equatable {
    var position: Int64
    var sourceTransaction: UInt64
    var streamID: String
    var streamType: String
    var streamVersion: Int64
    var realm: String
    var type: String
    var revision: Int32
    var payload: String
    var metadata: String
    var recordedAt: String
    var eventMetadata: EventMetadata

    /// Decodes a row of `RealmMoveSQL.staged`.
    init(row: PQRow) throws {
        position = try row.decode(Int64.self, at: 0)
        sourceTransaction = try row.decode(PQTransactionID.self, at: 1).rawValue
        streamID = try row.decode(String.self, at: 2)
        streamType = try row.decode(String.self, at: 3)
        streamVersion = try row.decode(Int64.self, at: 4)
        realm = try row.decode(String.self, at: 5)
        type = try row.decode(String.self, at: 6)
        revision = Int32(try row.decode(Int.self, at: 7))
        payload = try row.decode(String.self, at: 8)
        metadata = try row.decode(String.self, at: 9)
        recordedAt = try row.decode(String.self, at: 10)
        eventMetadata = EventMetadata(
            correlationID: try row.decode(String?.self, at: 11), causationID: try row.decode(String?.self, at: 12),
            actor: try row.decode(String?.self, at: 13), clientIP: try row.decode(String?.self, at: 14),
            userAgent: try row.decode(String?.self, at: 15))
    }

    init(position: Int64, sourceTransaction: UInt64, streamID: String = "s", streamVersion: Int64 = 1) {
        self.position = position
        self.sourceTransaction = sourceTransaction
        self.streamID = streamID
        streamType = "t"
        self.streamVersion = streamVersion
        realm = "r"
        type = "e"
        revision = 1
        payload = "{}"
        metadata = "{}"
        recordedAt = "2026-01-01 00:00:00+00"
        eventMetadata = .none
    }

    /// The event as the inline projections take it at an append.
    var envelope: EventEnvelope {
        EventEnvelope(
            stream: StreamRef(id: streamID, type: streamType, realm: realm), streamVersion: streamVersion, type: type,
            revision: Int(revision), payload: Array(payload.utf8), metadata: eventMetadata)
    }

    /// Splits events in the source's log order (transaction id, position) into runs whose
    /// positions rise. The target orders its log by (its transaction id, position), and the
    /// moved events keep their positions, so each run is appended in a transaction of its own:
    /// the target then reads them in the source's order, and the audit log's leaves follow.
    static func runs(_ events: [RealmMoveEvent]) -> [[RealmMoveEvent]] {
        var runs: [[RealmMoveEvent]] = []
        for event in events {
            if let last = runs.last?.last, last.position < event.position {
                runs[runs.count - 1].append(event)
            } else {
                runs.append([event])
            }
        }
        return runs
    }
}
