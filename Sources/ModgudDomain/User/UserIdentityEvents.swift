import EventSourcing
import Foundation

/// user.identity_linked (issue 48): a provider's account is one of this user's ways in. The
/// provider's subject (`sub`) identifies the person there, so it is personal data: sealed under
/// the user's key, and unreadable once the user is erased. The lookup from (provider, subject)
/// to the user is the `federated_identities` table's blind index, written in the same
/// transaction and deleted at erasure.
public struct UserIdentityLinked: DomainEvent, Equatable {
    public static let eventType = "user.identity_linked"
    /// The realm's provider id (`apple`, `google`, …).
    public var provider: String
    public var subject: PersonalText
    /// How the link was made: `sign-up` (the account was created by the sign-in),
    /// `verified-email` (the provider verified the account's address and the realm allows
    /// linking on that), `email-code` (the person proved the mailbox).
    public var via: String

    public init(provider: String, subject: PersonalText, via: String) {
        self.provider = provider
        self.subject = subject
        self.via = via
    }
}

/// user.identity_unlinked: the provider's account no longer signs this user in.
public struct UserIdentityUnlinked: DomainEvent, Equatable {
    public static let eventType = "user.identity_unlinked"
    public var provider: String
    /// Why: `user` (they unlinked it), `admin`, or the provider's notice
    /// (`consent-revoked`, `account-delete`).
    public var reason: String

    public init(provider: String, reason: String) {
        self.provider = provider
        self.reason = reason
    }
}
