import ArgumentParser
import Foundation
import ModgudService

/// `modgud console`: the operator console's accounts (issue 31).
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console", abstract: "Set up who may sign in to the operator console.", subcommands: [AddOperator.self])

    struct AddOperator: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-operator",
            abstract: "Make an address an operator: creates the operator realm, its console client and the user when missing, grants the role.",
            discussion: "Needs MODGUD_MASTER_KEY. Safe to run again. Take the role away with `modgud user revoke-role REALM EMAIL operator`.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The operator's email address (codes are sent there).") var email: String
        @Option(help: "The console's host name, the RP-ID of operators' passkeys (console.example.com).") var rpID: String?
        @Option(help: "The operator realm (MODGUD_CONSOLE_REALM of the servers).") var realm = ProcessInfo.processInfo.environment["MODGUD_CONSOLE_REALM"] ?? "operators"

        func run() async throws {
            let done = try await AdminContext.run(database) { context in
                try await context.services.console.with(settings: .init(realm: realm)).addOperator(email: email, rpID: rpID, metadata: context.metadata)
            }
            if done.realmCreated { print("realm        \(realm) created") }
            if done.clientCreated { print("client       \(OperatorConsole.clientID) created") }
            print("operator     \(done.userID.uuidString.lowercased()) \(email)\(done.userCreated ? " (new user)" : "")\(done.roleGranted ? "" : " (already an operator)")")
        }
    }
}
