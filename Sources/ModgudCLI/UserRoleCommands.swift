import ArgumentParser
import ModgudService

extension UserCommand {
    /// `modgud user grant-role REALM USER ROLE` (issue 31).
    struct GrantRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant-role",
            abstract: "Give a user a role (`operator` in the console's realm admits the user to the operator console).")
        @OptionGroup var role: RoleChange
        func run() async throws { try await role.apply(granted: true) }
    }

    /// `modgud user revoke-role REALM USER ROLE`: a console session of the user ends at once.
    struct RevokeRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-role", abstract: "Take a role away (an operator's console sessions end at once).")
        @OptionGroup var role: RoleChange
        func run() async throws { try await role.apply(granted: false) }
    }

    struct RoleChange: ParsableArguments {
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "Email or user id.") var user: String
        @Argument(help: "The role: 1 to 64 of a-z, 0-9, -, _, . and :.") var role: String

        func apply(granted: Bool) async throws {
            try await AdminContext.run(database) { context in
                guard let id = try await context.admin.users.find(realm: realm, user) else { throw CommandError("no such user") }
                let state = try await context.admin.users.setRole(role, granted: granted, realm: realm, userID: id, metadata: context.metadata)
                print("\(id.uuidString.lowercased()) roles: \(state.roles.isEmpty ? "-" : state.roles.joined(separator: ", "))")
            }
        }
    }
}
