import ArgumentParser
import Foundation
import ModgudService

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "audit", abstract: "Histories from the log.", subcommands: [UserAudit.self, VerifyAuditLog.self, PrintCheckpoint.self])

    struct UserAudit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "user", abstract: "A user's history: time, event, actor, client, IP.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "Email or user id.") var user: String

        func run() async throws {
            let entries = try await AdminContext.run(database) { context in
                guard let id = try await context.admin.users.find(realm: realm, user) else { throw CommandError("no such user") }
                return try await context.admin.audit.userHistory(realm: realm, userID: id)
            }
            print("TIME\tEVENT\tDETAIL\tACTOR\tCLIENT\tIP")
            for entry in entries {
                let time = entry.recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false))
                print("\(time)\t\(entry.event)\t\(entry.detail)\t\(entry.actor ?? "-")\t\(entry.client ?? "-")\t\(entry.clientIP ?? "-")")
            }
        }
    }
}
