import EventStorePostgres
import Foundation
import ModgudDomain

/// A realm's recent sign-in failures, for spotting an attack from the console (issue 43): wrong
/// codes and links, second factors, burns, a spent refresh token presented again, a passkey
/// whose counter went back. Read newest first through the log's partial index of exactly
/// these events (migration 0019).
extension AuditQueries {
    /// What kind of failure; the raw values are the console's filter values.
    public enum FailureKind: String, CaseIterable, Sendable {
        case wrongCode = "wrong_code"
        case wrongSecondFactor = "wrong_second_factor"
        case burned
        case refreshReuse = "refresh_reuse"
        case passkeyClone = "passkey_clone"

        /// In words, for the console.
        public var label: String {
            switch self {
            case .wrongCode: "wrong code or link"
            case .wrongSecondFactor: "wrong second factor"
            case .burned: "code burned (too many wrong attempts)"
            case .refreshReuse: "spent refresh token presented again"
            case .passkeyClone: "passkey counter went back (a clone?)"
            }
        }
    }

    public struct SignInFailure: Sendable, Equatable {
        public var recordedAt: Date
        public var kind: FailureKind
        /// The client the request came through, when it named itself (a refresh does not).
        public var client: String?
        /// The address and user agent, opened while their day key lives.
        public var address: String?
        public var userAgent: String?
    }

    /// The realm's failures since `since`, newest first; with `client` or `kind`, only those.
    /// At most `limit` are read before filtering.
    public func signInFailures(realm: String, since: Date, client: String? = nil, kind: FailureKind? = nil, limit: Int = 1000) async throws
        -> [SignInFailure]
    {
        try await ServiceRefusal.translating {
            var failures: [SignInFailure] = []
            for event in try await EventLogMaintenance(pool: pool).signInFailures(realm: realm, since: since, limit: limit) {
                let payload = Self.fields(event.payload)
                let metadata = Self.fields(event.metadata)
                guard let found = Self.kind(type: event.type, reason: payload["reason"]), kind == nil || found == kind else { continue }
                let by = metadata["actor"].flatMap { $0.hasPrefix("client:") ? String($0.dropFirst("client:".count)) : nil }
                guard client == nil || by == client else { continue }
                failures.append(
                    SignInFailure(
                        recordedAt: event.recordedAt, kind: found, client: by, address: try await vault.openForTheDay(metadata["clientIP"]),
                        userAgent: try await vault.openForTheDay(metadata["userAgent"])))
            }
            return failures
        }
    }

    static func kind(type: String, reason: String?) -> FailureKind? {
        switch type {
        case ChallengeAttemptFailed.eventType:
            reason == ChallengeAttemptFailed.Reason.wrongSecondFactor.rawValue ? .wrongSecondFactor : .wrongCode
        case ChallengeBurned.eventType: .burned
        case TokenFamilyRevoked.eventType: reason == RevocationReason.reuse.rawValue ? .refreshReuse : nil
        case PasskeyCloneSuspected.eventType: .passkeyClone
        default: nil
        }
    }
}
