import Foundation

/// The email challenges of one address and purpose family (docs/spec.md sections 2 and 3): at most
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
        /// Issue a challenge unless a live one with the same binding was issued less than
        /// `cooldown` ago (then: no event).
        case issue(ChallengeIssued, cooldown: TimeInterval)
        /// Present a secret, as its hash, with what the service found about the account, by
        /// `presenter` (the redeeming request's client and attested instance, issue 65).
        case redeem(presentedHash: String, gate: RedeemGate = .open, by: FlowBinding.Presenter = .anyone)
    }

    /// What stands between a right secret and a consumed challenge, found by the service
    /// before the command (the account's status and second factor live in another stream).
    public enum RedeemGate: Sendable, Equatable {
        /// Nothing: consume.
        case open
        /// The account is disabled or deleted.
        case accountCannotSignIn
        /// The account has TOTP and no code came with the request.
        case secondFactorMissing
        /// The account has TOTP and the code that came is wrong or already used.
        case secondFactorWrong
    }

    public static let initialState = State()

    /// A right secret for an account that cannot sign in (disabled or deleted).
    public static let accountCannotSignIn = DomainError("Account.CannotSignIn", "The account cannot sign in.")
    /// A right secret for an account with TOTP, and no TOTP code came: the challenge stays live
    /// and nothing is written (no guess at the second factor was made).
    public static let secondFactorRequired = DomainError("TOTP.Required", "Two-factor authentication is required; supply totp_code.")

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [EmailChallengeEvent] {
        switch command {
        case .issue(let issued, let cooldown):
            // Silent only for the same binding: a live code another client or instance (or an
            // unattested request) asked for cannot be redeemed by this one, so it gets its own.
            if state.isLive(at: now), let current = state.current, current.binding == issued.binding,
                now.timeIntervalSince(current.issuedAt) < cooldown
            {
                return []  // silent: the answer to the requester is the same either way
            }
            return [.issued(issued)]
        case .redeem(let presented, let gate, let presenter):
            guard state.isLive(at: now), let current = state.current else {
                throw DomainError("Challenge.Invalid", "Invalid or expired code.")
            }
            // Issue 65 (draft-ietf-oauth-attestation-based-client-auth-10 section 9.4): the
            // code or link is the client's and attested instance's that asked for it. Anyone
            // else is answered as for a wrong one, before the secret is compared, and nothing
            // is written: no attempt counts, so another client cannot burn it either.
            guard current.binding.admits(presenter) else {
                throw DomainError("Challenge.Invalid", current.purpose == .magicLink ? "Invalid or expired link." : "Invalid or expired code.")
            }
            guard constantTimeEqual(presented, current.secretHash) else {
                // A magic token carries 256 bits: guessing is hopeless, so a wrong one writes
                // nothing (whoever knows a user id must not be able to burn that user's link).
                guard current.purpose != .magicLink else { throw DomainError("Challenge.Invalid", "Invalid or expired link.") }
                return failedAttempt(state: state, current: current, reason: .wrongCode)
            }
            // The secret is right; what the account still owes decides (docs/spec.md section 2).
            switch gate {
            case .open:
                return [.consumed(ChallengeConsumed(challengeID: current.challengeID))]
            case .accountCannotSignIn:
                throw accountCannotSignIn
            case .secondFactorMissing:
                // The code stays live: the app asks for the TOTP code and sends both again.
                throw secondFactorRequired
            case .secondFactorWrong:
                // Counts against the code or link, so it bounds guesses at the second factor too
                // (a stolen link or code gives `maxAttempts` TOTP guesses, then is burned).
                return failedAttempt(state: state, current: current, reason: .wrongSecondFactor)
            }
        }
    }

    private static func failedAttempt(state: State, current: ChallengeIssued, reason: ChallengeAttemptFailed.Reason) -> [EmailChallengeEvent] {
        let attempts = state.attempts + 1
        var events: [EmailChallengeEvent] = [
            .attemptFailed(ChallengeAttemptFailed(challengeID: current.challengeID, attempts: attempts, reason: reason))
        ]
        if attempts >= maxAttempts { events.append(.burned(ChallengeBurned(challengeID: current.challengeID))) }
        return events
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

extension Array where Element == EmailChallengeEvent {
    /// Whether these events consume the challenge (the secret was right and nothing was owed).
    public var consumeChallenge: Bool {
        contains { if case .consumed = $0 { true } else { false } }
    }
}
