import Foundation

/// One sign-in's chain of tokens: the refresh token rotates on every use, and presenting a
/// spent one revokes the whole family (RFC 9700 section 4.14.2, reuse detection).
public enum TokenFamily: Aggregate {
    public static let streamType = "token-family"

    public struct State: Sendable, Equatable {
        public var started: TokenFamilyStarted?
        public var currentRefreshHash: String?
        public var refreshExpiresAt: Date?
        /// A 64-bit fingerprint of every refresh token this family spent, for reuse detection,
        /// which needs membership only (the hashes themselves are in the log). A family that
        /// refreshes hourly for a year spends 8,760 tokens: as fingerprints they take 8 bytes
        /// each and evolving the state copies no strings, where a set of hashes made every
        /// refresh copy every hash the family ever spent (issue 49). A presented token reaches
        /// the family by a lookup of its full hash, so it is one of the family's own; two of
        /// them sharing a fingerprint has a chance of about n² / 2⁶⁵.
        public var spentRefreshFingerprints: Set<UInt64> = []
        public var generation = 0
        public var revoked: RevocationReason?
        /// The refresh token spent by the last rotation, and when: the reuse grace's window.
        public var lastSpentRefreshHash: String?
        public var lastRotatedAt: Date?
        /// After a retry within the grace: the first answer's token, valid beside the current one
        /// until either is used.
        public var alternateRefreshHash: String?
        /// When the last refused refresh was recorded (at most one a `refusalInterval`).
        public var lastRefusalAt: Date?

        public var exists: Bool { started != nil }

        /// Whether this family spent the refresh token with this hash.
        public func hasSpent(_ refreshHash: String) -> Bool {
            spentRefreshFingerprints.contains(Self.fingerprint(refreshHash))
        }

        /// FNV-1a, 64 bits, of the hash's text: stable across processes and platforms.
        static func fingerprint(_ refreshHash: String) -> UInt64 {
            var value: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in refreshHash.utf8 {
                value ^= UInt64(byte)
                value &*= 0x0000_0100_0000_01b3
            }
            return value
        }

        mutating func spend(_ refreshHash: String) {
            spentRefreshFingerprints.insert(Self.fingerprint(refreshHash))
        }
    }

    public enum Command: Sendable {
        case start(TokenFamilyStarted)
        /// Present a refresh token. `userStamp` is the user's current security stamp (nil: the
        /// user is gone or disabled). `sessionEndsAt`: the absolute end of the sign-in (the new
        /// refresh token expires by then, and nothing is refreshed after it). `reuseGrace`: how
        /// long after a rotation the token it spent may be presented once more.
        case refresh(
            presentedHash: String, newRefreshHash: String, newRefreshExpiresAt: Date, accessToken: IssuedAccessToken, userStamp: String?,
            sessionEndsAt: Date? = nil, reuseGrace: TimeInterval = 0)
        case revoke(RevocationReason)
    }

    public static let initialState = State()

    /// The least time between two recorded refusals of one family: enough for an operator to
    /// see that, and when, a client keeps presenting a dead token; no more.
    public static let refusalInterval: TimeInterval = 60

    /// A refused refresh as an event, unless one was recorded within `refusalInterval`.
    static func refusal(_ reason: TokenFamilyRefreshRefused.Reason, state: State, now: Date) -> [TokenFamilyEvent] {
        if let last = state.lastRefusalAt, now.timeIntervalSince(last) < refusalInterval { return [] }
        return [.refreshRefused(TokenFamilyRefreshRefused(reason: reason, revokedBecause: reason == .revoked ? state.revoked : nil, refusedAt: now))]
    }

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [TokenFamilyEvent] {
        switch command {
        case .start(let started):
            guard !state.exists else { throw DomainError.conflict("TokenFamily.AlreadyExists", "The family exists.") }
            return [.started(started)]
        case .refresh(let presented, let newHash, let newExpiry, let accessToken, let userStamp, let sessionEndsAt, let reuseGrace):
            guard let started = state.started else { throw DomainError.notFound("TokenFamily.NotFound", "No such token family.") }
            // A dead family refuses, and says so in the log (an event, not an error: the actor
            // appends it; the token service answers invalid_grant for anything not refreshed).
            guard state.revoked == nil else { return refusal(.revoked, state: state, now: now) }
            // Within the grace, the token the last rotation spent may come once more (two refreshes
            // at once, or a retry after a lost answer): it gets a new token too, and the first
            // answer's token stays valid beside it, so whichever the client keeps works. Using
            // either retires the other.
            let withinGrace =
                reuseGrace > 0 && presented == state.lastSpentRefreshHash && state.alternateRefreshHash == nil
                && state.lastRotatedAt.map { now.timeIntervalSince($0) <= reuseGrace } == true
            if state.hasSpent(presented) && !withinGrace {
                // A spent token presented again: someone holds a copy. Kill the family.
                return [.revoked(TokenFamilyRevoked(reason: .reuse, presentedRefreshHash: presented))]
            }
            guard withinGrace || presented == state.currentRefreshHash || presented == state.alternateRefreshHash else {
                throw DomainError("TokenFamily.UnknownRefreshToken", "The refresh token is not this family's.")
            }
            guard let userStamp, userStamp == started.securityStamp else {
                return [.revoked(TokenFamilyRevoked(reason: .stamp, presentedRefreshHash: nil))]
            }
            if let sessionEndsAt, now >= sessionEndsAt { return refusal(.sessionEnded, state: state, now: now) }
            guard let expiry = state.refreshExpiresAt, now < expiry else { return refusal(.expired, state: state, now: now) }
            return [
                .refreshed(
                    TokenFamilyRefreshed(
                        spentRefreshHash: presented, refreshTokenHash: newHash, refreshExpiresAt: sessionEndsAt.map { min(newExpiry, $0) } ?? newExpiry,
                        accessToken: accessToken, generation: state.generation + 1, rotatedAt: withinGrace ? state.lastRotatedAt : now,
                        retiredRefreshHash: withinGrace
                            ? nil : [state.currentRefreshHash, state.alternateRefreshHash].compactMap { $0 }.first { $0 != presented },
                        alternateRefreshHash: withinGrace ? state.currentRefreshHash : nil))
            ]
        case .revoke(let reason):
            guard state.exists else { throw DomainError.notFound("TokenFamily.NotFound", "No such token family.") }
            return state.revoked == nil ? [.revoked(TokenFamilyRevoked(reason: reason, presentedRefreshHash: nil))] : []
        }
    }

    public static func evolve(_ state: State, _ event: TokenFamilyEvent) -> State {
        var next = state
        switch event {
        case .started(let started):
            next.started = started
            next.currentRefreshHash = started.refreshTokenHash
            next.refreshExpiresAt = started.refreshExpiresAt
        case .refreshed(let refreshed):
            next.spend(refreshed.spentRefreshHash)
            if let retired = refreshed.retiredRefreshHash { next.spend(retired) }
            next.lastSpentRefreshHash = refreshed.spentRefreshHash
            next.lastRotatedAt = refreshed.rotatedAt
            next.alternateRefreshHash = refreshed.alternateRefreshHash
            next.currentRefreshHash = refreshed.refreshTokenHash
            next.refreshExpiresAt = refreshed.refreshExpiresAt
            next.generation = refreshed.generation
        case .revoked(let revoked):
            next.revoked = revoked.reason
        case .refreshRefused(let refused):
            next.lastRefusalAt = refused.refusedAt
        }
        return next
    }
}
