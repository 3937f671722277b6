import ArgumentParser
import Foundation
import ModgudService

/// `modgud privacy`: the state of personal-data sealing, and the one-time rewrite of events
/// written before it began (issue 13; docs/operations/privacy.md).
struct PrivacyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "privacy", abstract: "Personal data: sealing status and the one-time rewrite of older events.",
        subcommands: [Status.self, SealLegacy.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show subject keys, erased subjects, and whether older events await sealing.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let pool = database.makePool(maxConnections: 1)
            let keys = try await PersonalDataVault.keyCounts(pool: pool)
            let pending = try await LegacySealer.pending(pool: pool)
            print("user keys        \(keys.users) (\(keys.erasedUsers) erased)")
            print("client IP days   \(keys.addressDays) readable (\(keys.expiredAddressDays) expired)")
            print("older events     \(pending ? "await `modgud privacy seal-legacy --apply`" : "none in plaintext")")
            await pool.close()
        }
    }

    struct SealLegacy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seal-legacy",
            abstract: "Rewrite events written before sealing began so they hold no personal data in plaintext.",
            discussion: """
                Without --apply it only counts. With it, it seals addresses, names and passkey names under each person's \
                key, drops them from login codes and expired registrations, seals or drops (past the retention) client \
                IPs, renames code streams named by an unkeyed hash, then rebuilds the users and passkeys read models. Positions, versions, types and \
                times stay. One run at a time (advisory lock); a second run changes nothing. Take a backup first, and let \
                older backups expire (docs/operations/backups.md).
                """)
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Write the rewrite (default: count only).") var apply = false
        @Option(help: "Client IPs older than this many days are dropped instead of sealed.") var ipRetentionDays = 30

        func run() async throws {
            let report = try await AdminContext.run(database) { context in
                try await context.services.legacySealer.with(addressRetention: Double(ipRetentionDays) * 86_400).run(dryRun: !apply)
            }
            let verb = apply ? "rewritten" : "to rewrite"
            print("events scanned   \(report.eventsScanned)")
            print(("events " + verb).padding(toLength: 17, withPad: " ", startingAt: 0) + " \(report.eventsRewritten)")
            print("client IPs       \(report.addressesSealed) sealed, \(report.addressesDropped) dropped (past \(ipRetentionDays) days)")
            print("code streams     \(report.streamsRenamed) renamed")
            if !apply { print("dry run: pass --apply to write") }
        }
    }
}
