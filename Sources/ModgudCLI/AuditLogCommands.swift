import ArgumentParser
import EventStorePostgres
import Foundation
import ModgudService
import TransparencyLog

/// `modgud audit verify REALM`: recompute the realm's audit log from the stored events and
/// check every checkpoint (docs/operations/audit-log.md, "Verifying").
struct VerifyAuditLog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute every leaf of a realm's audit log from the events, rebuild the root, and check every checkpoint.",
        discussion: """
            Exits 0 when the log verifies, 1 with the first position where anything differs. --state FILE makes a long run \
            resumable: the tree so far is saved there after each page and read back on the next run. --checkpoint FILE \
            verifies against a checkpoint note held outside the database, as a witness does; --key names the verifier key \
            to trust instead of the one stored in the database.
            """)
    @OptionGroup var database: DatabaseOptions
    @Argument var realm: String
    @Option(help: "A checkpoint note kept outside the database (`modgud audit checkpoint` prints one).") var checkpoint: String?
    @Option(help: "The verifier key to trust (name+id+base64), instead of the database's.") var key: String?
    @Option(help: "A file to resume from and save progress to.") var state: String?

    func run() async throws {
        let external = try checkpoint.map { try String(contentsOfFile: $0, encoding: .utf8) }
        let resume = try state.flatMap(VerifyState.load)?.tree(realm: realm)
        let report = try await AdminContext.run(database) { context in
            let (origin, publicKey) = try await trustedKey(context)
            let verifier = AuditLogVerifier(pool: context.pool, origin: origin, publicKey: publicKey)
            let started = ContinuousClock.now
            let stateFile = state
            let realm = self.realm
            let report = try await verifier.verify(
                realm: realm, resume: resume, external: external,
                progress: { done, total in
                    let seconds = max((ContinuousClock.now - started).seconds, 0.001)
                    FileHandle.standardError.write(Data("verified \(done)/\(total) leaves (\(Int(Double(done) / seconds))/s)\n".utf8))
                },
                save: { tree in if let stateFile { VerifyState(realm: realm, tree: tree).save(to: stateFile) } })
            return (report, ContinuousClock.now - started)
        }
        let (result, elapsed) = report
        print("realm \(realm): \(result.size) leaves, \(result.leavesChecked) checked in \(String(format: "%.2f", elapsed.seconds)) s, \(result.checkpointsChecked) checkpoints")
        if result.removed > 0 || result.rewritten > 0 {
            print("recorded operations: \(result.removed) events removed, \(result.rewritten) rewritten (their leaves keep the original hashes)")
        }
        if let finding = result.finding {
            print("FAILED at \(finding)")
            throw ExitCode(1)
        }
        print("OK")
    }

    private func trustedKey(_ context: AdminContext) async throws -> (String, [UInt8]) {
        if let key {
            let parts = key.split(separator: "+", maxSplits: 2)
            guard parts.count == 3, let raw = Data(base64Encoded: String(parts[2])), raw.count == 33, raw.first == 0x01 else {
                throw CommandError("--key must be a note verifier key: name+keyid+base64(0x01 || Ed25519 public key)")
            }
            return (String(parts[0]), Array(raw.dropFirst()))
        }
        guard let stored = try await context.admin.audit.signingKey(realm: realm) else {
            throw CommandError("realm \(realm) has no audit log key yet (no checkpoint was signed)")
        }
        return stored
    }
}

/// `modgud audit checkpoint REALM`: the latest signed checkpoint, for an auditor to keep.
struct PrintCheckpoint: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint", abstract: "Print the realm's latest signed checkpoint note (stdout) and its verifier key (stderr).")
    @OptionGroup var database: DatabaseOptions
    @Argument var realm: String

    func run() async throws {
        let latest = try await AdminContext.run(database) { context in try await context.admin.audit.checkpoint(realm: realm) }
        guard let latest else { throw CommandError("realm \(realm) has no checkpoint yet") }
        FileHandle.standardError.write(Data("verifier key: \(latest.verifierKey)\n".utf8))
        print(latest.note, terminator: "")
    }
}

/// A resumable verification's saved tree.
struct VerifyState: Codable {
    var realm: String
    var size: Int64
    var hashes: [String]

    init(realm: String, tree: CompactRange) {
        self.realm = realm
        size = tree.size
        hashes = tree.hashes.map { Data($0).base64EncodedString() }
    }

    static func load(_ path: String) throws -> VerifyState? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONDecoder().decode(VerifyState.self, from: data)
    }

    func tree(realm: String) throws -> CompactRange? {
        guard realm == self.realm else { throw CommandError("the state file belongs to realm \(self.realm)") }
        let hashes = self.hashes.compactMap { Data(base64Encoded: $0).map(Array.init) }
        guard hashes.count == CompactRange.pieces(forSize: size).count else { throw CommandError("the state file is damaged") }
        return CompactRange(size: size, hashes: hashes)
    }

    func save(to path: String) {
        guard let data = try? JSONEncoder().encode(self) else { return }
        _ = FileManager.default.createFile(atPath: path, contents: data)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
