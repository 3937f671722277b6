import EventSourcing

/// Where the request being served came from, for the services' records that no caller passes
/// metadata to (a tripped rate limit: issue 43). Set once per request by the HTTP adapter's
/// observation middleware; nil outside a request (tools, background work, unit tests).
public struct RequestOrigin: Sendable, Equatable {
    /// The request id (the events' correlation id).
    public var requestID: String
    public var clientIP: String?
    public var userAgent: String?

    public init(requestID: String, clientIP: String?, userAgent: String?) {
        self.requestID = requestID
        self.clientIP = clientIP
        self.userAgent = userAgent
    }

    @TaskLocal public static var current: RequestOrigin?

    /// The metadata of an event the request causes.
    var metadata: EventMetadata {
        EventMetadata(correlationID: requestID, clientIP: clientIP, userAgent: userAgent)
    }
}
