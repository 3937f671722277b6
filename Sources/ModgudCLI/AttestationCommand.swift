import ArgumentParser
import Foundation
import ModgudService

/// `modgud attestation`: the reference data behind client attestation (issue 66).
struct AttestationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestation",
        abstract: "Reference data of client attestation: Google's Android attestation status list.",
        subcommands: [StatusList.self])

    struct StatusList: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status-list",
            abstract: "Show or replace the Android attestation status list (revoked and suspended serials).",
            subcommands: [Show.self, Import.self])
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The list in force: imported or shipped, entries, SHA-256.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let pool = database.makePool(maxConnections: 1)
            defer { Task { await pool.close() } }
            let summary = try await AndroidAttestationStatusTable.summary(pool: pool)
            print("source: \(summary.source)")
            print("refused entries: \(summary.entries)")
            print("sha256: \(summary.sha256)")
            if let at = summary.importedAt { print("imported at: \(at.formatted(.iso8601))") }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the list from a file in Google's format (https://android.googleapis.com/attestation/status, fetched by you).",
            discussion: "Every instance uses the new list at its next Android key attestation; the server never calls Google.")

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The status list JSON file.") var file: String

        func run() async throws {
            guard let data = FileManager.default.contents(atPath: file) else { throw CommandError("cannot read \(file)") }
            let list: AndroidAttestationStatusList
            do { list = try AndroidAttestationStatusList(json: Array(data)) } catch { throw CommandError("\(file): \(error)") }
            let pool = database.makePool(maxConnections: 1)
            try await AndroidAttestationStatusTable.replace(with: list, now: Date(), pool: pool)
            await pool.close()
            print("imported \(list.entries.count) revoked or suspended serials (sha256 \(list.sha256))")
        }
    }
}
