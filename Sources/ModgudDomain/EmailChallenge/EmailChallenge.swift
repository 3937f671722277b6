import Foundation

/// The email challenges of one address and purpose family (SPEC.md sections 2 and 3): at most
/// one live challenge; a new one voids the old; resends within the cooldown are silent; three
/// wrong guesses burn it; single use. Every rule is decided through the expected-version
/// append, so it holds across instances and under concurrency.
public enum EmailChallenge: Aggregate {
    public static let streamType = "email-challenge"

    /// Wrong guesses that burn a code (the next try fails even when right).
    public static let maxAttempts = 3

    public struct State: Sendable, Equatable {
        public var current: ChallengeIssued?
        public var attempts = 0
        public var burned = false
        public var consumed = false

        /// Whether the current challenge can still be redeemed at `now`.
        public func isLive(at now: Date) -> Bool {
            guard let current else { return false }
            return !burned && !consumed && now < current.expiresAt
        }
    }

    public enum Command: Sendable {
        /// Issue a challenge unless a live one was issued less than `cooldown` ago (then: no event).
        case issue(ChallengeIssued, cooldown: TimeInterval)
        /// Present a secret, as its hash.
        case redeem(presentedHash: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [EmailChallengeEvent] {
        switch command {
        case .issue(let issued, let cooldown):
            if state.isLive(at: now), let current = state.current, now.timeIntervalSince(current.issuedAt) < cooldown {
                return []  // silent: the answer to the requester is the same either way
            }
            return [.issued(issued)]
        case .redeem(let presented):
            guard state.isLive(at: now), let current = state.current else {
                throw DomainError("Challenge.Invalid", "Invalid or expired code.")
            }
            if constantTimeEqual(presented, current.secretHash) {
                return [.consumed(ChallengeConsumed(challengeID: current.challengeID))]
            }
            // A magic token carries 256 bits: guessing is hopeless, so a wrong one writes nothing
            // (an attacker who knows a user id must not be able to burn that user's link).
            guard current.purpose != .magicLink else { throw DomainError("Challenge.Invalid", "Invalid or expired link.") }
            let attempts = state.attempts + 1
            var events: [EmailChallengeEvent] = [.attemptFailed(ChallengeAttemptFailed(challengeID: current.challengeID, attempts: attempts))]
            if attempts >= maxAttempts { events.append(.burned(ChallengeBurned(challengeID: current.challengeID))) }
            return events
        }
    }

    public static func evolve(_ state: State, _ event: EmailChallengeEvent) -> State {
        var next = state
        switch event {
        case .issued(let issued):
            next = State(current: issued)  // a new challenge voids the previous one
        case .attemptFailed(let failed):
            next.attempts = failed.attempts
        case .burned:
            next.burned = true
        case .consumed:
            next.consumed = true
        }
        return next
    }

    private static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let (left, right) = (Array(lhs.utf8), Array(rhs.utf8))
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
