import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// What the account owes besides the proof (issue 68: found once, by `SignInPipeline.gate`):
/// its status, and the second factor a factor asks for. Found before the proof's command, since
/// the account lives in another stream than the code, link or ceremony.
struct AccountGate: Sendable {
    var gate = EmailChallenge.RedeemGate.open
    var user: User.State?
    /// The user's stream version the gate was found at (0 for a user this sign-in creates).
    var userVersion: Int64 = 0
    /// An accepted TOTP step, spent in the proof's transaction.
    var totpStep: UInt64?

    /// The gate of a user this sign-in creates: open, nothing owed.
    static func registering(_ registered: UserRegistered) -> AccountGate {
        AccountGate(user: User.evolve(User.initialState, .registered(registered)))
    }

    /// The gate as a refusal, for a proof whose own command does not weigh it (a provider's
    /// ID token): a shut account, then a missing or wrong second factor.
    func requireOpen() throws {
        switch gate {
        case .open: return
        case .accountCannotSignIn: throw SignInPipeline.accountCannotSignIn
        case .secondFactorMissing, .secondFactorWrong: throw SecondFactor.refusal
        }
    }

    /// The accepted TOTP step, as a write to the user's stream at the version the gate was
    /// found at: a replay of the same TOTP code (or a concurrent one, or any change to the
    /// user meanwhile) loses there, and the whole transaction with it. nil without a step.
    func spentStep(realm: String) throws -> StreamWrite? {
        guard let step = totpStep, let userID = user?.id else { return nil }
        return StreamWrite(
            stream: StreamNames.user(realm: realm, userID: userID), expected: ExpectedVersion(current: userVersion),
            events: [try NewEvent(UserTOTPStepAccepted(step: step))])
    }
}
