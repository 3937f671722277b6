#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An event as stored: its envelope plus its place in the global log.
@dynamicMemberLookup
public struct RecordedEvent: Hashable, Sendable {
    public var envelope: EventEnvelope
    /// Position in the global log (unique, increasing in insertion order).
    public var position: Int64
    /// The writing transaction's 64-bit id; with `position` it forms the log cursor.
    public var transactionID: UInt64
    /// When the store recorded it.
    public var recordedAt: Date

    public init(envelope: EventEnvelope, position: Int64, transactionID: UInt64, recordedAt: Date) {
        self.envelope = envelope
        self.position = position
        self.transactionID = transactionID
        self.recordedAt = recordedAt
    }

    /// The cursor just past this event.
    public var cursor: LogCursor {
        LogCursor(transactionID: transactionID, position: position)
    }

    public subscript<T>(dynamicMember keyPath: KeyPath<EventEnvelope, T>) -> T {
        envelope[keyPath: keyPath]
    }
}
