import ArgumentParser
import Foundation
import ModgudDomain
import ModgudService

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Inspect users and end their sessions.",
        subcommands: [Create.self, List.self, Show.self, Disable.self, Enable.self, LogoutEverywhere.self, Delete.self, Erase.self, TOTPEnable.self, TOTPDisable.self, Passkeys.self, RevokePasskey.self, GrantRole.self, RevokeRole.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a confirmed user with no password, ready to sign in by email code or magic link; print its id.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var email: String
        @Option var firstName: String?
        @Option var lastName: String?
        @Option var username: String?

        func run() async throws {
            let user = try await AdminContext.run(database) {
                try await $0.admin.users.create(
                    realm: realm, email: email, firstName: firstName, lastName: lastName, username: username, metadata: $0.metadata)
            }
            print("\(user.id.uuidString.lowercased())\t\(user.email ?? "")\t\(user.status)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a realm's users.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String

        func run() async throws {
            let users = try await AdminContext.run(database, { try await $0.admin.users.list(realm: realm) })
            // An address is unreadable for two reasons: its person was erased, or this command
            // runs without the master key (the address is sealed, not gone).
            for user in users {
                print("\(user.id.uuidString.lowercased())\t\(user.email ?? (user.status == "erased" ? "[erased]" : "[sealed]"))\t\(user.status)")
            }
            if users.contains(where: { $0.email == nil && $0.status != "erased" }) {
                FileHandle.standardError.write(Data("[sealed]: the address is encrypted; set MODGUD_MASTER_KEY to read it\n".utf8))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a user by email or id.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "Email or user id.") var user: String

        func run() async throws {
            let (id, state, profile) = try await AdminContext.run(database) { context in
                guard let id = try await context.admin.users.find(realm: realm, user) else { throw CommandError("no such user") }
                let (state, profile) = try await context.admin.users.profile(realm: realm, userID: id)
                return (id, state, profile)
            }
            print("user         \(id.uuidString.lowercased())")
            print("email        \(profile.email ?? (state.status == .erased ? "[erased]" : "-")) (\(state.emailConfirmed ? "confirmed" : "unconfirmed"))")
            print("name         \(profile.displayName)")
            print("status       \(state.status.rawValue)")
            print("roles        \(state.roles.isEmpty ? "-" : state.roles.joined(separator: ", "))")
            print("two-factor   \(state.encryptedTOTPSecret == nil ? "off" : "on")")
        }
    }

    struct Target: ParsableArguments {
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "Email or user id.") var user: String

        func apply(_ action: UserAdministration.UserAction) async throws {
            try await AdminContext.run(database) { context in
                guard let id = try await context.admin.users.find(realm: realm, user) else { throw CommandError("no such user") }
                let state = try await context.admin.users.apply(action, realm: realm, userID: id, metadata: context.metadata)
                print("\(id.uuidString.lowercased()) \(action.rawValue): status \(state.status.rawValue)")
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable a user: sign-in and refresh stop at once.")
        @OptionGroup var target: Target
        func run() async throws { try await target.apply(.disable) }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user (earlier sessions stay ended).")
        @OptionGroup var target: Target
        func run() async throws { try await target.apply(.enable) }
    }

    struct LogoutEverywhere: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logout-everywhere", abstract: "End every session: the next refresh fails, reference tokens die at once.")
        @OptionGroup var target: Target
        func run() async throws { try await target.apply(.logoutEverywhere) }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a user (sessions end; the email becomes free).")
        @OptionGroup var target: Target
        func run() async throws { try await target.apply(.delete) }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a user (GDPR Article 17): sessions and passkeys end, the data key is shredded, the address becomes free.",
            discussion: """
                USER is an id or an address; an address also erases its pending registrations. The history stays \
                (event types and times); every address and name in it becomes unreadable. Running it again is harmless.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "Email or user id.") var user: String

        func run() async throws {
            let outcome = try await AdminContext.run(database) { context in
                try await context.admin.users.erase(realm: realm, user, metadata: context.metadata)
            }
            print(
                """
                user         \(outcome.userID?.uuidString.lowercased() ?? "-") \(outcome.erasedNow ? "erased" : "was erased already")
                families     \(outcome.familiesRevoked) revoked
                passkeys     \(outcome.passkeysDeleted) deleted
                keys         \(outcome.keysShredded) shredded
                mail         \(outcome.mailDeleted) queued messages deleted
                """)
        }
    }

    struct TOTPEnable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "totp-enable", abstract: "Turn two-factor (TOTP) on with a new secret; prints the otpauth:// URI for the user's app.")
        @OptionGroup var target: Target

        func run() async throws {
            let provisioning = try await AdminContext.run(target.database) { context in
                guard let id = try await context.admin.users.find(realm: target.realm, target.user) else { throw CommandError("no such user") }
                return try await context.admin.users.enableTOTP(realm: target.realm, userID: id, metadata: context.metadata)
            }
            print("otpauth uri  \(provisioning.uri)")
            print("secret       \(provisioning.secret)")
        }
    }

    struct TOTPDisable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "totp-disable", abstract: "Turn two-factor (TOTP) off.")
        @OptionGroup var target: Target

        func run() async throws {
            try await AdminContext.run(target.database) { context in
                guard let id = try await context.admin.users.find(realm: target.realm, target.user) else { throw CommandError("no such user") }
                try await context.admin.users.disableTOTP(realm: target.realm, userID: id, metadata: context.metadata)
            }
            print("two-factor off")
        }
    }

    struct Passkeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a user's passkeys (management id, name, provider, RP-ID, created, last used).")
        @OptionGroup var target: Target

        func run() async throws {
            let passkeys = try await AdminContext.run(target.database) { context in
                guard let id = try await context.admin.users.find(realm: target.realm, target.user) else { throw CommandError("no such user") }
                return try await context.admin.users.passkeys(realm: target.realm, userID: id)
            }
            for passkey in passkeys {
                let used = passkey.lastUsedAt.map { $0.formatted(Date.ISO8601FormatStyle()) } ?? "never used"
                print(
                    "\(passkey.id.uuidString.lowercased())\t\(passkey.displayName)\t\(passkey.provider.name)\t\(passkey.rpID)"
                        + "\t\(passkey.createdAt.formatted(Date.ISO8601FormatStyle()))\t\(used)")
            }
        }
    }

    struct RevokePasskey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke-passkey", abstract: "Revoke one of a user's passkeys.")
        @OptionGroup var target: Target
        @Argument(help: "The passkey's management id (from `user passkeys`).") var passkey: String

        func run() async throws {
            try await AdminContext.run(target.database) { context in
                guard let id = try await context.admin.users.find(realm: target.realm, target.user) else { throw CommandError("no such user") }
                guard let passkeyID = UUID(uuidString: passkey),
                    try await context.admin.users.revokePasskey(realm: target.realm, userID: id, passkeyID: passkeyID, metadata: context.metadata)
                else { throw CommandError("the user has no such passkey") }
            }
            print("passkey revoked")
        }
    }
}
