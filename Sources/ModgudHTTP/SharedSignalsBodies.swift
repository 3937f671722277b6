import Foundation
import ModgudDomain
import ModgudService

/// The JSON of the Shared Signals endpoints (OpenID SSF 1.0 sections 7 and 8, RFC 8936).
enum SharedSignalsBodies {
    /// Transmitter Configuration Metadata (SSF 1.0 section 7.1).
    struct Metadata: Encodable {
        var spec_version = "1_0"
        var issuer: String
        var jwks_uri: String
        var delivery_methods_supported = [SignalDeliveryMethod.push.rawValue, SignalDeliveryMethod.poll.rawValue]
        var configuration_endpoint: String
        var status_endpoint: String
        var add_subject_endpoint: String
        var remove_subject_endpoint: String
        var verification_endpoint: String
        var critical_subject_members = ["user"]
        var authorization_schemes = [["spec_urn": "urn:ietf:rfc:6749"]]
        var default_subjects = "ALL"

        init(issuer: String) {
            let base = RequestParsing.base(of: issuer)
            self.issuer = issuer
            jwks_uri = base + "/.well-known/jwks.json"
            configuration_endpoint = base + "/ssf/stream"
            status_endpoint = base + "/ssf/status"
            add_subject_endpoint = base + "/ssf/subjects/add"
            remove_subject_endpoint = base + "/ssf/subjects/remove"
            verification_endpoint = base + "/ssf/verify"
        }
    }

    struct Delivery: Codable {
        var method: String
        var endpoint_url: String?
        var authorization_header: String?
    }

    /// A create, update or replace request: the receiver-supplied properties; the
    /// transmitter-supplied ones are allowed and must match (`stream_id`) or are ignored.
    struct StreamRequest: Decodable {
        var stream_id: String?
        var delivery: Delivery?
        var events_requested: [String]?
        var description: String?
        /// Modgud's extension: `iss_sub` (default) or `email` subjects.
        var format: String?

        static let members: Set<String> = [
            "stream_id", "iss", "aud", "delivery", "events_supported", "events_requested", "events_delivered", "description",
            "min_verification_interval", "inactivity_timeout", "format",
        ]
    }

    /// A stream's configuration as receivers read it (section 8.1.1). The push credential is
    /// never returned.
    struct Stream: Encodable {
        var stream_id: String
        var iss: String
        var aud: String
        var delivery: Delivery
        var events_supported = SignalEvent.supported.map(\.uri)
        var events_requested: [String]?
        var events_delivered: [String]
        var description: String?
        var min_verification_interval = Int(SignalStream.minVerificationInterval)
        var format: String

        init?(_ state: SignalStream.State, issuer: String) {
            guard let streamID = state.streamID, let configuration = state.configuration, let clientID = state.clientID else { return nil }
            stream_id = streamID
            iss = state.issuer ?? issuer
            aud = clientID
            let endpoint = configuration.method == .poll ? RequestParsing.base(of: iss) + "/ssf/poll/" + streamID : configuration.endpointURL
            delivery = Delivery(method: configuration.method.rawValue, endpoint_url: endpoint)
            events_requested = configuration.eventsRequested
            events_delivered = SignalEvent.delivered(requested: configuration.eventsRequested).map(\.uri)
            description = configuration.description
            format = configuration.format.rawValue
        }
    }

    struct Status: Codable {
        var stream_id: String
        var status: String
        var reason: String?
    }

    struct SubjectRequest: Decodable {
        var stream_id: String
        var subject: [String: StrictJSON.AnyJSONValue]
        var verified: Bool?
    }

    struct VerifyRequest: Decodable {
        var stream_id: String
        var state: String?
    }

    /// RFC 8936 section 2.4.
    struct PollRequest: Decodable {
        var maxEvents: Int?
        var returnImmediately: Bool?
        var ack: [String]?
        var setErrs: [String: SetError]?
    }

    struct SetError: Decodable {
        var err: String
        var description: String?
    }

    struct PollResponse: Encodable {
        var sets: [String: String]
        var moreAvailable: Bool
    }

    /// RFC 9493 subject identifiers the transmitter can resolve; a complex subject by its `user`.
    /// Nil for a well-formed subject in a format no user here has.
    static func subject(_ members: [String: StrictJSON.AnyJSONValue]) throws(StrictJSON.Failure) -> SignalSubject? {
        guard case .string(let format)? = members["format"] else { throw .invalid("subject.format is required.") }
        func text(_ name: String) throws(StrictJSON.Failure) -> String {
            guard case .string(let value)? = members[name] else { throw .invalid("subject.\(name) is required for format \(format).") }
            return value
        }
        switch format {
        case "iss_sub": return .issSub(iss: try text("iss"), sub: try text("sub"))
        case "email": return .email(try text("email"))
        case "opaque": return .opaque(try text("id"))
        case "complex":
            guard case .object(let user)? = members["user"] else { return nil }
            return try subject(user)
        default: return nil
        }
    }
}
