/// The security events the transmitter sends (issue 30; docs/guides/shared-signals.md maps
/// each log event to the SET it produces). The raw value is the short name the outbox keeps.
public enum SignalEvent: String, CaseIterable, Sendable {
    /// CAEP 1.0 section 3.1.
    case sessionRevoked = "session-revoked"
    /// CAEP 1.0 section 3.2.
    case tokenClaimsChange = "token-claims-change"
    /// CAEP 1.0 section 3.3.
    case credentialChange = "credential-change"
    /// RISC 1.0 section 2.3.
    case accountDisabled = "account-disabled"
    /// RISC 1.0 section 2.4.
    case accountEnabled = "account-enabled"
    /// RISC 1.0 section 2.2.
    case accountPurged = "account-purged"
    /// SSF 1.0 section 8.1.4.1: sent on request, whatever the stream asked for.
    case verification
    /// SSF 1.0 section 8.1.5: the transmitter (an operator) changed the stream's status; sent
    /// whatever the stream asked for, and even when the new status holds everything else.
    case streamUpdated = "stream-updated"

    /// The event-type URI, the key of the SET's `events` claim.
    public var uri: String {
        switch self {
        case .sessionRevoked, .tokenClaimsChange, .credentialChange:
            return "https://schemas.openid.net/secevent/caep/event-type/" + rawValue
        case .accountDisabled, .accountEnabled, .accountPurged:
            return "https://schemas.openid.net/secevent/risc/event-type/" + rawValue
        case .verification, .streamUpdated:
            return "https://schemas.openid.net/secevent/ssf/event-type/" + rawValue
        }
    }

    /// `events_supported`: what a receiver can ask for.
    public static let supported: [SignalEvent] = [
        .sessionRevoked, .credentialChange, .tokenClaimsChange, .accountDisabled, .accountEnabled, .accountPurged,
    ]

    public init?(uri: String) {
        guard let event = Self.allCases.first(where: { $0.uri == uri }) else { return nil }
        self = event
    }

    /// `events_delivered` (SSF 1.0 section 8.1.1): the supported events among those requested,
    /// in the order of `supported`; every supported event when the receiver named none.
    /// Unknown URIs are ignored, as the section requires.
    public static func delivered(requested: [String]?) -> [SignalEvent] {
        guard let requested else { return supported }
        let asked = Set(requested)
        return supported.filter { asked.contains($0.uri) }
    }
}
