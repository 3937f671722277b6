/// Why a delivery failed. `isPermanent` tells the outbox whether retrying can help.
public enum SMTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an unexpected reply code.
    case unexpectedReply(command: String, code: Int, text: String)
    /// No reply within the timeout.
    case timeout
    /// The connection closed before the conversation ended.
    case connectionClosed
    /// A reply line was longer than RFC 5321 section 4.5.3.1.5 allows (with generous slack).
    case replyTooLong
    /// A reply did not start with a three-digit code.
    case malformedReply(String)
    /// STARTTLS was required but not offered, or credentials were given without TLS.
    case insecure(String)
    /// Credentials were given but the server offers neither AUTH PLAIN nor AUTH LOGIN.
    case noSupportedAuthMechanism
    /// The address cannot be put on the wire (a CR, LF or angle bracket in it).
    case invalidAddress(String)

    /// 5xx replies will fail again; everything else may succeed later.
    public var isPermanent: Bool {
        switch self {
        case .unexpectedReply(_, let code, _): return code >= 500
        case .invalidAddress, .noSupportedAuthMechanism, .insecure: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .unexpectedReply(let command, let code, let text): return "\(command) was answered \(code) \(text)"
        case .timeout: return "the SMTP server did not answer in time"
        case .connectionClosed: return "the SMTP server closed the connection"
        case .replyTooLong: return "an SMTP reply line was too long"
        case .malformedReply(let line): return "malformed SMTP reply: \(line.prefix(80))"
        case .insecure(let reason): return reason
        case .noSupportedAuthMechanism: return "the SMTP server offers neither AUTH PLAIN nor AUTH LOGIN"
        case .invalidAddress(let address): return "the address \(address) cannot be sent"
        }
    }
}
