import Foundation

/// Where a page of a realm's user list starts: at the beginning, after a user, or ending before
/// one (`UsersTable.list`; the console pages with it).
public enum UserListPage: Sendable, Equatable {
    case first
    case after(UUID)
    case before(UUID)
}

/// The order of a realm's user list (the console's sort).
public enum UserListOrder: String, CaseIterable, Sendable {
    /// Registration, oldest first.
    case registered
    /// Registration, newest first.
    case newest
    /// Last sign-in, most recent first; users who never signed in last, newest registration
    /// first among them.
    case lastSignIn = "last-sign-in"

    /// The sort key (an SQL expression over `users u` and `user_sign_ins s`) and whether the
    /// list runs down it. Ties fall to the user id in the same direction.
    var key: (expression: String, descending: Bool) {
        switch self {
        case .registered: ("u.registered_at", false)
        case .newest: ("u.registered_at", true)
        case .lastSignIn: ("coalesce(s.signed_in_at, '-infinity'::timestamptz)", true)
        }
    }
}
