import Foundation

/// Where a page of a realm's user list starts: at the beginning, after a user, or ending before
/// one (`UsersTable.list`; the console pages with it).
public enum UserListPage: Sendable, Equatable {
    case first
    case after(UUID)
    case before(UUID)
}
