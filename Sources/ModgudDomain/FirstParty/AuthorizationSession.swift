import Foundation

/// An `auth_session` of OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps,
/// issue 45) as the event log records it: begun for a client with one factor, ended by the
/// authorization code it issues, and that code's redemption. The secrets (the session token,
/// the code, the PKCE challenge and the sealed token response) live in the tables of
/// `FirstPartyAuthorization`, never here; the stream holds what an auditor needs: who, which
/// client, which factor, bound to a DPoP key or not, and when.
///
/// Single use: one code per session, one redemption per code, decided by the stream's expected
/// version (and by the code row's deletion, which the redemption's event follows).
public enum AuthorizationSession: Aggregate {
    public static let streamType = "authorization-session"

    /// What a session was begun with: the factor it takes.
    public enum Factor: String, Codable, Sendable {
        case emailCode = "email_code"
        case magicLink = "magic_link"
        case passkey
        /// A recovery code (issue 46), redeemed in the first request with `login_hint`.
        case recoveryCode = "recovery_code"
        /// A session the person had already signed in with, presented again (the draft's
        /// section on re-authorization): it takes the factor the person proves again.
        case reauthentication
    }

    public struct State: Sendable, Equatable {
        public var begun: AuthorizationSessionBegun?
        public var codeIssued: AuthorizationCodeIssued?
        public var redeemed = false
        /// A re-authorization session presented again: the sign-in session it began.
        public var continuedBy: UUID?

        /// Whether the session can still issue its code (or, for a re-authorization, begin its
        /// sign-in) at `now`.
        public func isLive(at now: Date) -> Bool {
            guard let begun else { return false }
            return codeIssued == nil && continuedBy == nil && now < begun.expiresAt
        }
    }

    public enum Command: Sendable {
        case begin(AuthorizationSessionBegun)
        /// The session's factor was proven: the sign-in (`familyID`) is sealed behind a code.
        case issueCode(AuthorizationCodeIssued)
        /// The code was taken at the token endpoint: redeemed, or refused for `reason`.
        case redeem(refusal: AuthorizationCodeRedeemed.Refusal?)
        /// A re-authorization session was presented: it ends, and the sign-in session `next`
        /// takes over (once).
        case continueAs(next: UUID)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [AuthorizationSessionEvent] {
        switch command {
        case .begin(let begun):
            guard state.begun == nil else { throw DomainError("AuthorizationSession.Exists", "The session exists.") }
            return [.begun(begun)]
        case .issueCode(let issued):
            guard state.isLive(at: now) else { throw DomainError("AuthorizationSession.Invalid", "The auth_session is expired or was used.") }
            return [.codeIssued(issued)]
        case .redeem(let refusal):
            guard state.codeIssued != nil, !state.redeemed else {
                throw DomainError("AuthorizationSession.CodeInvalid", "The authorization code is unknown or was used.")
            }
            return [.codeRedeemed(AuthorizationCodeRedeemed(refusal: refusal))]
        case .continueAs(let next):
            guard state.isLive(at: now), state.begun?.factor == .reauthentication else {
                throw DomainError("AuthorizationSession.Invalid", "The auth_session is expired or was used.")
            }
            return [.continued(AuthorizationSessionContinued(nextSessionID: next))]
        }
    }

    public static func evolve(_ state: State, _ event: AuthorizationSessionEvent) -> State {
        var next = state
        switch event {
        case .begun(let begun): next.begun = begun
        case .codeIssued(let issued): next.codeIssued = issued
        case .codeRedeemed: next.redeemed = true
        case .continued(let continued): next.continuedBy = continued.nextSessionID
        }
        return next
    }
}
