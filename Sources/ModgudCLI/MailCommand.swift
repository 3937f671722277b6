import ArgumentParser
import Foundation
import ModgudService

/// `modgud mail`: the outbox as operators see it.
struct MailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mail", abstract: "Inspect the mail outbox and retry dead letters.", subcommands: [Status.self, RetryDead.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pending and dead mails (whose, status and errors; never an address or contents).")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let (entries, counts) = try await AdminContext.run(database) { context in
                let outbox = try context.outbox()
                return (try await outbox.entries(), try await outbox.counts())
            }
            print("pending \(counts.pending), dead \(counts.dead)")
            for entry in entries {
                print(
                    "\(entry.id.uuidString.lowercased())\t\(entry.realm)\t\(entry.subject ?? "-")\t\(entry.status)\tattempts \(entry.attempts)\t\(entry.lastError ?? "")")
            }
        }
    }

    struct RetryDead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "retry-dead", abstract: "Send dead mails again (after fixing SMTP).")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let count = try await AdminContext.run(database) { try await $0.outbox().retryDead() }
            print("\(count) dead mails are pending again")
        }
    }
}
