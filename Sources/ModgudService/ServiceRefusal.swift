import ModgudDomain

/// A service's refusal in domain terms: what kind of "no" it is, a stable code and a
/// message. The HTTP layer alone turns the kind into a status and the refusal into a problem
/// or an OAuth error body (docs/architecture.md, "House habits").
public struct ServiceRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The request is wrong (400).
        case invalid
        /// The caller may not do this (403).
        case forbidden
        /// No such thing, or not the caller's (404).
        case notFound
        /// It clashes with what exists (409).
        case conflict
        /// The service cannot do this now or as configured (503).
        case unavailable
        /// Sooner than allowed after the last time (429).
        case tooFrequent
        /// The caller's sign-in is too old for this (401 with RFC 9470's
        /// `insufficient_user_authentication` challenge, its `max_age` in seconds).
        case insufficientUserAuthentication(maxAge: Int)
    }

    public var kind: Kind
    /// A stable code, `Area.Reason` (`Passkey.InvalidName`).
    public var code: String
    public var message: String

    public init(_ kind: Kind, _ code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public static func invalid(_ code: String, _ message: String) -> ServiceRefusal { ServiceRefusal(.invalid, code, message) }
    public static func forbidden(_ code: String, _ message: String) -> ServiceRefusal { ServiceRefusal(.forbidden, code, message) }

    public var description: String { "\(code): \(message)" }

    /// A domain refusal as the service's, of the same kind, code and message.
    public init(_ refused: DomainError) {
        let kind: Kind =
            switch refused.kind {
            case .invalid: .invalid
            case .notFound: .notFound
            case .conflict: .conflict
            case .tooFrequent: .tooFrequent
            }
        self.init(kind, refused.code, refused.message)
    }

    /// Runs `body`, turning a domain refusal into a service refusal (the services' edge:
    /// `DomainError` never reaches the HTTP adapter or the CLI).
    public static func translating<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let refused as DomainError {
            throw ServiceRefusal(refused)
        }
    }
}
