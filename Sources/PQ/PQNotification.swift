/// A message received through LISTEN/NOTIFY.
public struct PQNotification: Sendable, Hashable {
    /// The channel it was sent on.
    public var channel: String
    /// The payload given to NOTIFY (empty when none).
    public var payload: String
    /// The server process that sent it.
    public var senderPID: Int32
}
