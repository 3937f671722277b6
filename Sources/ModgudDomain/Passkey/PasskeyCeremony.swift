import Foundation

/// A WebAuthn ceremony handed to an app (docs/spec.md section 4): a 32-byte challenge, 5 minutes,
/// single use (decided by the stream's expected version), bound to the client that began it
/// (if any), the pinned RP-ID and, for enrollment, the user.
public enum PasskeyCeremony: Aggregate {
    public static let streamType = "passkey-ceremony"
    /// Ceremony lifetime.
    public static let lifetime: TimeInterval = 300

    public enum Kind: String, Codable, Sendable {
        case login
        case enrollment
        /// Passkey sign-up (issue 14): the ceremony carries the future user's id and sealed
        /// profile; redeeming it creates the user and the passkey together.
        case signUp = "sign_up"
        /// Approving a device authorization (RFC 8628, issue 69): an assertion with user
        /// verification, for the one authorization the ceremony names, by the person the
        /// approving app is signed in as (when it is an app).
        case deviceApproval = "device_approval"
    }

    public struct State: Sendable, Equatable {
        public var begun: PasskeyCeremonyBegun?
        public var consumed = false

        /// Whether the ceremony can still be redeemed at `now`.
        public func isLive(at now: Date) -> Bool {
            guard let begun else { return false }
            return !consumed && now < begun.expiresAt
        }
    }

    public enum Command: Sendable {
        case begin(PasskeyCeremonyBegun)
        /// Redeems the ceremony: `kind`, `presenter` (the client and attested instance, issue
        /// 65) and `userID` are what the redeeming request brings; a mismatch refuses it like an
        /// unknown ceremony. A failed verification consumes it too (on its own, before the
        /// refusal), so it cannot be retried; a successful sign-in consumes it in the append
        /// that records the use.
        case consume(kind: Kind, by: FlowBinding.Presenter, userID: UUID?)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [PasskeyCeremonyEvent] {
        switch command {
        case .begin(let begun):
            guard state.begun == nil else { throw DomainError("Ceremony.Exists", "The ceremony exists.") }
            guard begun.challenge.count >= 43 else { throw DomainError("Ceremony.WeakChallenge", "A challenge has at least 32 bytes.") }
            if begun.kind == .signUp, begun.clientID == nil || begun.registrantID == nil || begun.email == nil {
                throw DomainError("Ceremony.IncompleteSignUp", "A sign-up ceremony names its client, its registrant and the address.")
            }
            return [.begun(begun)]
        case .consume(let kind, let presenter, let userID):
            guard state.isLive(at: now), let begun = state.begun, begun.kind == kind else {
                throw DomainError("Ceremony.Invalid", "Invalid or expired passkey ceremony.")
            }
            // Bound to the client that began it (an anonymous begin binds to no client) and to
            // its attested instance (issue 65; draft-ietf-oauth-attestation-based-client-auth-10
            // section 9.4): a client that requires attestation redeems only its own instance's.
            guard begun.binding.admits(presenter) else {
                throw DomainError("Ceremony.Invalid", "Invalid or expired passkey ceremony.")
            }
            if kind == .enrollment, begun.userID == nil || begun.userID != userID {
                throw DomainError("Ceremony.Invalid", "Invalid or expired passkey ceremony.")
            }
            if kind == .deviceApproval, begun.deviceAuthorizationID == nil || (begun.userID != nil && begun.userID != userID) {
                throw DomainError("Ceremony.Invalid", "Invalid or expired passkey ceremony.")
            }
            return [.consumed(PasskeyCeremonyConsumed(ceremonyID: begun.ceremonyID))]
        }
    }

    public static func evolve(_ state: State, _ event: PasskeyCeremonyEvent) -> State {
        var next = state
        switch event {
        case .begun(let begun): next.begun = begun
        case .consumed: next.consumed = true
        }
        return next
    }
}
