import ArgumentParser
import Foundation

extension ClientCommand {
    /// `modgud client play-integrity REALM ID PACKAGE`: sets (or removes) the Play Console's
    /// keys for one of a client's Android apps (issue 47). The decryption key is secret, so it is
    /// read from a file (or standard input), never from the command line where shell history
    /// and `ps` would keep it.
    struct PlayIntegrity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "play-integrity",
            abstract: "Set the Play Console's Play Integrity keys for one of a client's Android apps (classic requests).",
            discussion: """
                Both keys come from the Play Console: App integrity > Play Integrity API > Response encryption. \
                The decryption key (AES, base64) is read from --decryption-key-file ('-' for standard input) and sealed \
                with the master key; the verification key (EC public key, base64 DER) is public.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument var id: String
        @Argument(help: "The Android app's package name (one of the client's --android-app).") var package: String
        @Option(help: "A file holding the base64 decryption key ('-' reads standard input).") var decryptionKeyFile: String?
        @Option(help: "The base64 verification key.") var verificationKey: String?
        @Flag(help: "Remove the app's keys: its verdicts are refused from then on.") var remove = false

        func validate() throws {
            guard remove || (decryptionKeyFile != nil && verificationKey != nil) else {
                throw ValidationError("Give --decryption-key-file and --verification-key, or --remove.")
            }
        }

        func run() async throws {
            if remove {
                ClientCommand.print(
                    try await AdminContext.run(database) {
                        try await $0.admin.clients.removePlayIntegrityKeys(realm: realm, id: id, packageName: package, metadata: $0.metadata)
                    })
                return
            }
            let decryptionKey = try Self.read(decryptionKeyFile ?? "-")
            ClientCommand.print(
                try await AdminContext.run(database) {
                    try await $0.admin.clients.setPlayIntegrityKeys(
                        realm: realm, id: id, packageName: package, decryptionKey: decryptionKey, verificationKey: verificationKey ?? "",
                        metadata: $0.metadata)
                })
        }

        static func read(_ path: String) throws -> String {
            let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}
