import ArgumentParser

/// `modgud`: the one executable of Modgud for Swift (started by `ModgudMain`).
struct Modgud: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modgud",
        abstract: "Modgud for Swift: passwordless sign-in tokens for native apps.",
        subcommands: [
            DevCommand.self,
            ServeCommand.self,
            CellCommand.self,
            RealmCommand.self,
            ClientCommand.self,
            UserCommand.self,
            AuditCommand.self,
            PrivacyCommand.self,
            MailCommand.self,
            SignalsCommand.self,
            ConsoleCommand.self,
            MigrateCommand.self,
            EventsCommand.self,
            ProjectionsCommand.self,
            AttestationCommand.self,
            BenchCommand.self,
            PostgresCommand.self,
            LoginCommand.self,
            TokenCommand.self,
            LogoutCommand.self,
        ]
    )
}
