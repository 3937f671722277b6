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
    /// The request's `User-Agent` (at most `maxUserAgentLength` characters): which app or
    /// browser on which system acted, for an operator's triage (issue 43).
    public var userAgent: String?

    /// The longest `userAgent` kept; longer ones are cut.
    public static let maxUserAgentLength = 256

    public init(correlationID: String? = nil, causationID: String? = nil, actor: String? = nil, clientIP: String? = nil, userAgent: String? = nil) {
        self.correlationID = correlationID
        self.causationID = causationID
        self.actor = actor
        self.clientIP = clientIP
        self.userAgent = userAgent.map { String($0.prefix(Self.maxUserAgentLength)) }
    }

    /// No metadata.
    public static let none = EventMetadata()

    /// A JSON object holding only the fields that are set (the stored form).
    public var jsonText: String {
        var fields: [String] = []
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            fields.append("\"\(key)\":\(JSONText.quote(value))")
        }
        add("correlationID", correlationID)
        add("causationID", causationID)
        add("actor", actor)
        add("clientIP", clientIP)
        add("userAgent", userAgent)
        return "{" + fields.joined(separator: ",") + "}"
    }
}
