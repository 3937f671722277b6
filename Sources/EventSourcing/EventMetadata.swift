/// Who caused an event, and as part of what.
///
/// Stored beside every event (never inside its payload) so that audit views can answer
/// "who did this, from where, in answer to what".
public struct EventMetadata: Codable, Hashable, Sendable {
    /// Ties together everything done for one incoming request.
    public var correlationID: String?
    /// The event or command that directly caused this one.
    public var causationID: String?
    /// Who acted: `user:<id>`, `client:<id>`, `admin:<name>`, `system`.
    public var actor: String?
    /// The client's IP address as the server saw it.
    public var clientIP: String?

    public init(correlationID: String? = nil, causationID: String? = nil, actor: String? = nil, clientIP: String? = nil) {
        self.correlationID = correlationID
        self.causationID = causationID
        self.actor = actor
        self.clientIP = clientIP
    }

    /// No metadata.
    public static let none = EventMetadata()
}
