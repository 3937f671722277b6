import Foundation

/// Administration shared by the CLI, the admin API and the console, by what it administers:
/// realms, clients, users, and the audit queries. Each part holds only its collaborators.
public struct Administration: Sendable {
    public let realms: RealmAdministration
    public let clients: ClientAdministration
    public let users: UserAdministration
    public let audit: AuditQueries
    let clock: @Sendable () -> Date

    /// The time of this instance's clock (tests inject one).
    public func now() -> Date {
        clock()
    }
}
