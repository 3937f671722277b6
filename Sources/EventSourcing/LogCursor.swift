/// A place in the global log: (transaction id, position), ordered lexicographically.
///
/// Why both: positions are handed out when rows are inserted but become visible when
/// their transaction commits, so a later position can become visible first. Readers
/// order by (transaction id, position) and only admit transactions that can no longer
/// be running, so a cursor never skips an event that commits late (docs/architecture.md, "The gap problem").
public struct LogCursor: Hashable, Sendable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    public var transactionID: UInt64
    public var position: Int64

    public init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }

    /// Before the first event.
    public static let start = LogCursor(transactionID: 0, position: 0)

    public static func < (lhs: LogCursor, rhs: LogCursor) -> Bool {
        (lhs.transactionID, lhs.position) < (rhs.transactionID, rhs.position)
    }

    /// `transactionID:position`, the form `--after` takes.
    public var description: String { "\(transactionID):\(position)" }

    /// Parses `transactionID:position`.
    public init?(_ description: String) {
        let parts = description.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let transaction = UInt64(parts[0]), let position = Int64(parts[1]), position >= 0 else {
            return nil
        }
        self.init(transactionID: transaction, position: position)
    }
}
