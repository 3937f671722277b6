import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ

/// The Shared Signals transmitter's cursor and channel; its tables' SQL lives in
/// `SignalStreamsTable` and `SignalOutboxTable`.
enum SignalTables {
    /// The transmitter's cursor in `checkpoints`, and its advisory lock.
    static let cursorName = "ssf_transmitter"
    /// NOTIFY channel: SETs were enqueued (payload: nothing; every instance looks).
    static let channel = "modgud_ssf"
    /// Sent in the batch's transaction: delivered at commit, to every instance's relay.
    static let notify: PQQuery = "SELECT pg_notify(\(channel), '')"
}
