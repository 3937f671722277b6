import Foundation
import ModgudDomain
import PQ

/// A provider account waiting to be linked to `userID` once the mailbox is proven (issue 48):
/// what an email code's redemption commits with the consumed code, the `user.identity_linked`
/// event and the lookup row in one transaction.
public struct PendingIdentityLink: Sendable {
    public var userID: UUID
    public var provider: String
    /// The provider's `sub`, sealed under the account's key.
    public var subject: PersonalText
    /// The blind index the sign-in finds the link by.
    public var subjectIndex: String

    /// How the link was proven, as the event records it.
    public static let via = "email-code"

    /// The lookup row, for the transaction that appends the link.
    func insert(realm: String, now: Date) -> PQQuery {
        FederatedIdentitiesTable.insert(realm: realm, provider: provider, subjectIndex: subjectIndex, userID: userID, now: now)
    }
}
