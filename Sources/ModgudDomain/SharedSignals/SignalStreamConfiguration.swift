import Foundation

/// How a stream's SETs reach the receiver (OpenID SSF 1.0 section 6, "Event Delivery").
public enum SignalDeliveryMethod: String, Codable, Hashable, Sendable {
    /// Push-based delivery (RFC 8935): the transmitter POSTs each SET to the receiver.
    case push = "urn:ietf:rfc:8935"
    /// Poll-based delivery (RFC 8936): the receiver fetches and acknowledges SETs.
    case poll = "urn:ietf:rfc:8936"
}

/// How the subject of a user's events is named in the SETs of a stream (RFC 9493).
public enum SignalSubjectFormat: String, Codable, Hashable, Sendable, CaseIterable {
    /// `iss_sub`: the realm's issuer and the user's `sub` (the default: it names nobody).
    case issSub = "iss_sub"
    /// `email`: only for receivers that may see addresses (the client is allowed the `email` scope).
    case email
}

/// A stream's status (SSF 1.0 section 8.1.2).
public enum SignalStreamStatus: String, Codable, Hashable, Sendable, CaseIterable {
    /// SETs are transmitted.
    case enabled
    /// SETs are held, and transmitted once the stream is enabled again.
    case paused
    /// Nothing is transmitted and nothing is held.
    case disabled
}

/// The receiver-supplied part of a stream's configuration (SSF 1.0 section 8.1.1), as the
/// log keeps it. The push endpoint's authorization header is a credential: it is sealed under
/// the master key before it reaches an event.
public struct SignalStreamConfiguration: Codable, Hashable, Sendable {
    public var method: SignalDeliveryMethod
    /// Push only: where SETs are POSTed.
    public var endpointURL: String?
    /// Push only: the sealed `Authorization` header value the receiver asked us to send.
    public var sealedAuthorization: String?
    /// The event-type URIs the receiver asked for; nil means every supported type.
    public var eventsRequested: [String]?
    public var description: String?
    public var format: SignalSubjectFormat

    public init(
        method: SignalDeliveryMethod, endpointURL: String? = nil, sealedAuthorization: String? = nil, eventsRequested: [String]? = nil,
        description: String? = nil, format: SignalSubjectFormat = .issSub
    ) {
        self.method = method
        self.endpointURL = endpointURL
        self.sealedAuthorization = sealedAuthorization
        self.eventsRequested = eventsRequested
        self.description = description
        self.format = format
    }

    /// The checks every create, update and replace passes (the HTTP layer answers 400).
    public func validate() throws(DomainError) {
        switch method {
        case .push:
            guard let endpointURL, Self.acceptablePushURL(endpointURL) else {
                throw DomainError(
                    "SignalStream.InvalidEndpoint", "A push stream needs an https endpoint_url (http only to a loopback address).")
            }
        case .poll:
            guard endpointURL == nil, sealedAuthorization == nil else {
                throw DomainError("SignalStream.PollEndpoint", "A poll stream's endpoint_url is the transmitter's; do not send one.")
            }
        }
        if let eventsRequested, eventsRequested.count > 64 || eventsRequested.contains(where: { $0.count > 256 }) {
            throw DomainError("SignalStream.InvalidEvents", "events_requested holds at most 64 URIs of at most 256 characters.")
        }
        if let description, description.count > 256 {
            throw DomainError("SignalStream.InvalidDescription", "A description is at most 256 characters.")
        }
    }

    /// https anywhere; plain http only to the loopback interface (a receiver beside us in
    /// development and tests). No credentials or fragment in the URL.
    static func acceptablePushURL(_ text: String) -> Bool {
        guard text.count <= 2048, let url = URLComponents(string: text), let host = url.host?.lowercased(), !host.isEmpty,
            url.user == nil, url.password == nil, url.fragment == nil
        else { return false }
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
        default: return false
        }
    }
}
