import EventStorePostgres
import Foundation
import ModgudDomain

/// A realm's recent sign-in failures, for spotting an attack from the console (issue 43): wrong
/// codes and links, second factors, burns, a spent refresh token presented again, a refresh
/// of an ended session, a refused passkey assertion or one whose counter went back, a
/// tripped rate limit. Read newest first through the log's partial index of exactly
/// these events (migration 0019).
extension AuditQueries {
    /// What kind of failure; the raw values are the console's filter values.
    public enum FailureKind: String, CaseIterable, Sendable {
        case wrongCode = "wrong_code"
        case wrongSecondFactor = "wrong_second_factor"
        case burned
        case refreshReuse = "refresh_reuse"
        case codeReuse = "code_reuse"
        case refreshRefused = "refresh_refused"
        case passkeyRefused = "passkey_refused"
        case passkeyClone = "passkey_clone"
        case rateLimited = "rate_limited"

        /// In words, for the console.
        public var label: String {
            switch self {
            case .wrongCode: "wrong code or link"
            case .wrongSecondFactor: "wrong second factor"
            case .burned: "code burned (too many wrong attempts)"
            case .refreshReuse: "spent refresh token presented again"
            case .codeReuse: "spent authorization code presented again"
            case .refreshRefused: "refresh of an ended session"
            case .passkeyRefused: "passkey assertion refused"
            case .passkeyClone: "passkey counter went back (a clone?)"
            case .rateLimited: "rate limit reached"
            }
        }
    }

    public struct SignInFailure: Sendable, Equatable {
        public var recordedAt: Date
        public var kind: FailureKind
        /// The client the request came through (a refresh's: its family's).
        public var client: String?
        /// The address and user agent, opened while their day key lives.
        public var address: String?
        public var userAgent: String?
        /// What exactly: the refusal's reason, the rate limit's policy.
        public var detail: String? = nil
    }

    /// The event types of sign-in failures, for a user's history filter (a revocation is a
    /// failure only for reuse and a changed stamp: the filter shows every revocation).
    public static let failureEventTypes = [
        ChallengeAttemptFailed.eventType, ChallengeBurned.eventType, PasskeyAssertionFailed.eventType, PasskeyCloneSuspected.eventType,
        TokenFamilyRefreshRefused.eventType, TokenFamilyRevoked.eventType, RateLimitTripped.eventType,
    ]

    /// The realm's failures since `since`, newest first; with `client` or `kind`, only those.
    /// At most `limit` are read before filtering.
    public func signInFailures(realm: String, since: Date, client: String? = nil, kind: FailureKind? = nil, limit: Int = 1000) async throws
        -> [SignInFailure]
    {
        try await ServiceRefusal.translating {
            var failures: [SignInFailure] = []
            let events = try await EventLogMaintenance(pool: pool).signInFailures(realm: realm, since: since, limit: limit)
            // A refresh names no client in its metadata: its family does.
            let familyOf = { (event: EventLogMaintenance.RawEvent) -> UUID? in
                guard event.streamID.hasPrefix(TokenFamily.streamType + "-") else { return nil }
                return UUID(uuidString: String(event.streamID.dropFirst(TokenFamily.streamType.count + 1)))
            }
            let familyClients = try await tokenTables.clients(ofFamilies: Array(Set(events.compactMap(familyOf))))
            for event in events {
                let payload = Self.fields(event.payload)
                let metadata = Self.fields(event.metadata)
                guard let found = Self.kind(type: event.type, reason: payload["reason"]), kind == nil || found == kind else { continue }
                let by = metadata["actor"].flatMap { $0.hasPrefix("client:") ? String($0.dropFirst("client:".count)) : nil }
                    ?? familyOf(event).flatMap { familyClients[$0] }
                guard client == nil || by == client else { continue }
                failures.append(
                    SignInFailure(
                        recordedAt: event.recordedAt, kind: found, client: by, address: try await vault.openForTheDay(metadata["clientIP"]),
                        userAgent: try await vault.openForTheDay(metadata["userAgent"]), detail: Self.detail(payload)))
            }
            return failures
        }
    }

    static func kind(type: String, reason: String?) -> FailureKind? {
        switch type {
        case ChallengeAttemptFailed.eventType:
            reason == ChallengeAttemptFailed.Reason.wrongSecondFactor.rawValue ? .wrongSecondFactor : .wrongCode
        case ChallengeBurned.eventType: .burned
        case TokenFamilyRevoked.eventType:
            switch reason {
            case RevocationReason.reuse.rawValue: .refreshReuse
            case RevocationReason.codeReuse.rawValue: .codeReuse
            case RevocationReason.stamp.rawValue: .refreshRefused
            default: nil
            }
        case TokenFamilyRefreshRefused.eventType: .refreshRefused
        case PasskeyAssertionFailed.eventType: .passkeyRefused
        case PasskeyCloneSuspected.eventType: .passkeyClone
        case RateLimitTripped.eventType: .rateLimited
        default: nil
        }
    }

    /// The particulars an operator reads beside the kind.
    static func detail(_ payload: [String: String]) -> String? {
        let words = { (reason: String) in reason == RevocationReason.stamp.rawValue ? "stamp changed" : reason }
        var parts: [String] = []
        if let reason = payload["reason"] { parts.append(words(reason) + (payload["revokedBecause"].map { " (\(words($0)))" } ?? "")) }
        if let policy = payload["policy"] { parts.append(policy) }
        if let wait = payload["retryAfterSeconds"] { parts.append("retry after \(wait) s") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}
