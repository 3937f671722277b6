import Foundation
import JWTKit
import ModgudDomain

/// The claims of a Sign in with Apple server-to-server notification JWS and their checks
/// (`AppleNotifications` applies them): pure, so the fuzzer reaches them
/// (Fuzz/AppleNotificationFuzz.swift) without a database.
public struct AppleNotificationClaims: JWTPayload {
    var iss: String
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var jti: String
    var events: String

    public func verify(using algorithm: some JWTAlgorithm) throws {}

    /// The decoded `events` string.
    public struct Event: Decodable, Sendable, Equatable {
        public var type: String
        public var sub: String
        public var email: String?
    }

    /// How old a notification may be: Apple retries for a while; older ones are refused.
    static let maxAge: TimeInterval = 24 * 3600

    /// The issuer (Apple writes it with and without a trailing slash), the age and the `jti`;
    /// then the `events` string decoded.
    func checked(provider: FederatedProvider, now: Date, skew: TimeInterval) throws -> Event {
        let issuer = iss.hasSuffix("/") ? String(iss.dropLast()) : iss
        guard provider.acceptedIssuers.contains(issuer) else {
            throw FederationError.refused(reason: "issuer", detail: "the notification's iss is not \(provider.issuer)")
        }
        guard iat.value.addingTimeInterval(Self.maxAge) > now else { throw FederationError.refused(reason: "expired", detail: "the notification is older than a day") }
        guard iat.value.addingTimeInterval(-skew) <= now else {
            throw FederationError.refused(reason: "issued_in_future", detail: "the notification's iat is in the future")
        }
        guard !jti.isEmpty, jti.utf8.count <= 256 else { throw FederationError.refused(reason: "malformed", detail: "the notification has no jti") }
        guard let event = try? JSONDecoder().decode(Event.self, from: Data(events.utf8)), !event.sub.isEmpty else {
            throw FederationError.refused(reason: "malformed", detail: "the notification's events is not Apple's event")
        }
        return event
    }

    /// The `aud` the payload names, read before its signature to choose whose keys check it.
    static func unverifiedAudience(_ payload: String) throws -> [String] {
        let object = try IDTokenVerifier.unverifiedClaims(payload, what: "the payload")
        if let one = object["aud"] as? String { return [one] }
        return (object["aud"] as? [String]) ?? []
    }
}
