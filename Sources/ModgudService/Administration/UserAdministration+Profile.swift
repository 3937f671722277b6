import EventSourcing
import Foundation
import ModgudDomain

/// An operator's correction of a user's names (issue 43: the console runs the account).
extension UserAdministration {
    /// Sets a user's username, first and last name; an empty or missing value clears the field.
    /// Each value is sealed under the user's key, as at registration. Unchanged names write
    /// nothing (sealed texts differ on every sealing, so the plaintexts are compared first).
    /// - Throws: `ServiceRefusal` `User.Deleted` (conflict-free: invalid) for a deleted or
    ///   erased user: nothing is sealed for them, so no key is made again.
    public func changeProfile(
        realm: String, userID: UUID, username: String?, firstName: String?, lastName: String?, metadata: EventMetadata
    ) async throws -> User.State {
        try await ServiceRefusal.translating {
            let vault = try requireVault()
            let actor = await users.actor(for: StreamNames.user(realm: realm, userID: userID))
            let state = try await actor.current().state
            guard state.exists else { throw DomainError.notFound("User.NotFound", "No such user.") }
            guard state.status != .deleted, state.status != .erased else { throw DomainError("User.Deleted", "The user was deleted.") }
            let wanted = (User.cleanName(username), User.cleanName(firstName), User.cleanName(lastName))
            let current = try await vault.profile(of: state)
            guard wanted != (current.username, current.firstName, current.lastName) else { return state }
            let subject = PersonalDataVault.userSubject(userID)
            func sealed(_ value: String?) async throws -> PersonalText? {
                guard let value else { return nil }
                return .sealed(try await vault.seal(value, subject: subject, realm: realm))
            }
            let command = User.Command.changeProfile(
                username: try await sealed(wanted.0), firstName: try await sealed(wanted.1), lastName: try await sealed(wanted.2))
            return try await actor.execute(command, now: now(), metadata: metadata).state
        }
    }
}
